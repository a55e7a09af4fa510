"""The MaxSim second stage's replay rows: per question, the default's candidates before its
second stage, with the MaxSim score of the top ``--depth`` of them.

Each haystack is indexed as the lab's ``default`` config does (``vestige.bench.runner``); each
question is searched with the default's options, and a recording stage in place of the second
stage keeps the top 50 fused candidates it is handed (their session, fused score and date) and
the question's "now". The MaxSim score of the top ``--depth`` is computed with
``vestige.rerank.maxsim`` (token vectors cached in ``benchmarks/.cache/maxsim_tokens.sqlite``,
so a rerun costs no model pass). ``benchmarks/maxsim_cv.py`` replays the stage from these rows.

    nice -n 10 python benchmarks/maxsim_pools.py locomo --data ../shared/data/locomo_dev.json.gz \\
        --out benchmarks/results/maxsim/pools/locomo.jsonl.gz
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from collections.abc import Sequence
from pathlib import Path

from vestige.bench.configs import get_config
from vestige.bench.runner import APP, LOADERS, Runner
from vestige.read.question import Question
from vestige.rerank.base import Reranker
from vestige.rerank.maxsim import MaxSimParams, MaxSimReranker, maxsim
from vestige.types import Hit

TOKEN_CACHE = "benchmarks/.cache/maxsim_tokens.sqlite"


class Recorder(Reranker):
    """A second stage that changes nothing and keeps what it was handed."""

    name = "record"

    def __init__(self) -> None:
        self.head: list[Hit] = []
        self.now: str | None = None

    def scores(self, query, hits, now=None):  # pragma: no cover - rerank_question is what search calls
        return [0.0] * len(hits)

    def rerank_question(self, question: Question, hits: Sequence[Hit]) -> list[Hit]:
        self.head = list(hits)
        self.now = question.now.isoformat() if question.now else None
        return list(hits)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", choices=sorted(LOADERS))
    parser.add_argument("--data", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--depth", type=int, default=20, help="candidates scored by MaxSim (default 20)")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args(argv)

    config = get_config("default")
    runner = Runner(config, progress=False, threads=args.threads)
    stage = MaxSimReranker(MaxSimParams(depth=args.depth, cache=TOKEN_CACHE), embedder=runner.embedder)
    haystacks = LOADERS[args.dataset](args.data, args.limit, None)
    prepared = runner._prepare(haystacks)
    runner._embed_missing(prepared)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    started, n = time.perf_counter(), 0
    with gzip.open(args.out, "wt", encoding="utf-8") as f:
        for h, hay in enumerate(haystacks):
            items = prepared[hay.unit]
            index = {p.session_id: i for i, p in enumerate(items)}
            memory = runner._index(items, "raw")
            recorder = Recorder()
            view = runner.search_view(memory, "raw").derive(reranker=recorder)
            for q in hay.questions:
                hits = list(view.search(q.text, app=APP, k=config.chunks_asked, now=q.date))
                head = recorder.head
                question = stage.question_vectors(q.text)
                late = [maxsim(question, c) for c in stage.candidate_vectors([x.text for x in head[: args.depth]])]
                row = {
                    "id": q.qid, "dataset": args.dataset, "unit": hay.unit, "type": q.qtype, "question": q.text,
                    "now": recorder.now, "n_sessions": len(items), "sessions": [p.session_id for p in items],
                    "gold": q.gold,
                    "head": [[index[x.session_id], round(x.score, 6), x.date, round(late[i], 6) if i < len(late) else None]
                             for i, x in enumerate(head)],
                    "tail": [index[x.session_id] for x in hits[len(head):]],
                }
                f.write(json.dumps(row, separators=(",", ":")) + "\n")
                n += 1
            memory.close()
            print(f"{hay.unit}: {h + 1}/{len(haystacks)} haystacks, {n} questions, "
                  f"{time.perf_counter() - started:.0f} s", flush=True)
    runner.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
