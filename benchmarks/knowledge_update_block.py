"""Newer first where memories disagree: on LongMemEval's knowledge-update questions, how often
the newest evidence session is in the context block and shown as the latest (not marked
"earlier than" another entry), today's block against this tree's.

    python benchmarks/knowledge_update_block.py [--data ../shared/data/longmemeval_s_dev.json.gz] \
        [--out benchmarks/results/context/knowledge_update_block.json]

Each question's haystack is indexed as the lab indexes it (default embedder and plan, embeddings
from the lab's cache) and asked at its own date. Today's block: chunks, no cut, the 0.65
share-of-best cut. This tree's: memories, the cut, the budget in passes, the marks. Rows per
question; the abstention questions ("_abs") are left out (their premise is false).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from diarist.bench.data import load_longmemeval
from diarist.bench.runner import DEFAULT_CACHE
from diarist.embed.cache import EmbeddingCache
from diarist.memory import Memory
from diarist.settings import CONTEXT_RELATIVE_CUT

ROOT = Path(__file__).resolve().parents[1]


def row(memory: Memory, question, dates: dict[str, str]) -> dict:
    """Where the newest evidence session stands in both blocks."""
    gold = sorted(question.gold, key=lambda sid: dates[sid])
    newest, older = gold[-1], gold[:-1]
    now = question.date.replace("/", "-").split(" (")[0] if question.date else None
    new = memory.context(question.text, app="q", now=now)
    today = memory.derive(group=False, cut=None).context(question.text, app="q", now=now,
                                                       relative_cut=CONTEXT_RELATIVE_CUT)
    marks = {s.hit.id: s.earlier_than for s in new.snippets}
    return {
        "id": question.qid, "question": question.text, "evidence": gold,
        "today_newest_in_block": newest in {s.hit.id for s in today.snippets},
        "newest_in_block": newest in marks,
        "newest_shown_latest": newest in marks and marks[newest] is None,
        "older_evidence_in_block": sum(sid in marks for sid in older),
        "older_evidence_marked_earlier": sum(marks.get(sid) is not None for sid in older),
        "tokens": new.n_tokens, "today_tokens": today.n_tokens,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "longmemeval_s_dev.json.gz"))
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    rows = []
    cache = EmbeddingCache(ROOT / DEFAULT_CACHE)
    try:
        for haystack in load_longmemeval(args.data):
            question = haystack.questions[0]
            if question.qtype != "knowledge-update" or question.abstention or not question.gold:
                continue
            with Memory(":memory:", embed_cache=cache) as memory:
                memory.add_sessions(haystack.sessions, app="q")
                dates = {s.session_id: str(s.date) for s in haystack.sessions}
                rows.append(row(memory, question, dates))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    finally:
        cache.close()
    n = len(rows)
    share = lambda key: sum(bool(r[key]) for r in rows) / n  # noqa: E731
    summary = {"questions": n, "today_newest_in_block": share("today_newest_in_block"),
               "newest_in_block": share("newest_in_block"), "newest_shown_latest": share("newest_shown_latest"),
               "with_older_evidence_in_block": sum(r["older_evidence_in_block"] > 0 for r in rows),
               "older_evidence_marked_earlier": sum(r["older_evidence_marked_earlier"] for r in rows),
               "older_evidence_in_block": sum(r["older_evidence_in_block"] for r in rows)}
    text = json.dumps({"summary": summary, "rows": rows}, indent=2)
    print(json.dumps(summary, indent=2))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
