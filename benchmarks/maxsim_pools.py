"""The MaxSim second stage's replay rows: per question, the default's candidates before its
second stage, with the MaxSim score of the top ``--depth`` of them.

Each haystack is indexed as the lab's ``default`` config does (``diarist.bench.runner``); each
question is searched with the default's options, and a recording stage in place of the second
stage keeps the top 50 fused candidates it is handed (their session, fused score and date) and
the question's "now". The MaxSim score of the top ``--depth`` is computed with
``diarist.rerank.maxsim`` (token vectors cached in ``benchmarks/.cache/maxsim_tokens.sqlite``,
so a rerun costs no model pass). ``benchmarks/maxsim_cv.py`` replays the stage from these rows.

Rows are appended haystack by haystack, and a rerun skips the questions already written, so a
run stopped part-way resumes. Haystacks go in a spread order (every 10th first, then the next
offset...), so the rows written so far sample the whole file, not its first question types.

    nice -n 10 python benchmarks/maxsim_pools.py locomo --data ../shared/data/locomo_dev.json.gz \\
        --out benchmarks/results/maxsim/pools/locomo.jsonl.gz

With ``--embedder mpnet --cache FILE`` the haystacks are indexed with mpnet (the stage on mpnet
fused); the MaxSim score still comes from MiniLM's token vectors, on mpnet's chunks.
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
import zlib
from collections.abc import Sequence
from pathlib import Path

from diarist import settings
from diarist.bench.configs import get_config
from diarist.embed import get_embedder
from diarist.bench.runner import APP, LOADERS, Runner
from diarist.read.question import Question
from diarist.rerank.base import Reranker
from diarist.rerank.maxsim import MaxSimParams, MaxSimReranker, maxsim
from diarist.types import Hit

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


def written_ids(path: Path) -> set[str]:
    """Question ids already in ``path``. A run killed mid-write leaves a truncated gzip member:
    the file is rewritten with its complete rows first, so appending can go on."""
    rows: list[str] = []
    damaged = False
    if path.exists():
        try:
            with gzip.open(path, "rt", encoding="utf-8") as f:
                for line in f:
                    rows.append(line)
        except (EOFError, OSError, zlib.error):
            damaged = True
    rows = [r for r in rows if r.endswith("\n")]
    if damaged:
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.writelines(rows)
    return {json.loads(r)["id"] for r in rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", choices=sorted(LOADERS))
    parser.add_argument("--data", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--depth", type=int, default=20, help="candidates scored by MaxSim (default 20)")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--stride", type=int, default=None, help="every Nth haystack only (as diarist bench --stride)")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--spread", type=int, default=10, help="haystack order: every SPREAD-th first")
    parser.add_argument("--embedder", default=None,
                        help="index (dense channel) with this embedder instead of the shipped one, e.g. mpnet; "
                        "MaxSim still reads the shipped model's token vectors")
    parser.add_argument("--cache", default="benchmarks/.cache/embeddings.sqlite",
                        help="the indexing embedder's embedding cache")
    args = parser.parse_args(argv)

    config = get_config("default")
    if args.embedder:
        runner = Runner(config, args.embedder, args.cache, False, args.threads)
        token_model = get_embedder(settings.EMBEDDER)
    else:
        runner = Runner(config, progress=False, threads=args.threads)
        token_model = runner.embedder
    stage = MaxSimReranker(MaxSimParams(depth=args.depth, cache=TOKEN_CACHE), embedder=token_model)
    haystacks = LOADERS[args.dataset](args.data, args.limit, args.stride)
    prepared = runner.prepare(haystacks)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    done = written_ids(Path(args.out))
    order = sorted(range(len(haystacks)), key=lambda i: (i % args.spread, i))
    started, n = time.perf_counter(), len(done)
    for h, hay in enumerate(haystacks[i] for i in order):
        questions = [q for q in hay.questions if q.qid not in done]
        if not questions:
            continue
        with gzip.open(args.out, "at", encoding="utf-8") as f:  # one gzip member per haystack
            items = prepared[hay.unit]
            index = {p.session_id: i for i, p in enumerate(items)}
            memory = runner.index(items, "raw")
            recorder = Recorder()
            view = runner.search_view(memory, "raw").derive(reranker=recorder)
            for q in questions:
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
