"""Calibrate the absolute relevance floor on real data, through the real search path.

For every haystack (each LongMemEval question's own sessions; each LoCoMo conversation) the
script asks, with no floor: the dataset's legitimate questions, its abstention questions
(LongMemEval `_abs`: the answer is not in the history), and off-topic questions the memory
knows nothing about (benchmarks/data/offtopic_questions.txt, written before any score was
seen; LongMemEval haystacks each get one, round-robin, so every off-topic question is asked 4
times; every LoCoMo conversation gets all 60). It records the best dense cosine search saw
(``Results.best_cosine``), one row per question, and derives the trade-off table from the rows:
floor -> legitimate questions lost, abstention and off-topic questions answered with nothing.

    python benchmarks/floor.py --out benchmarks/floor_calibration            # both datasets
    python benchmarks/floor.py --check benchmarks/floor_calibration          # recompute the tables

The floor sits on the cosine, not on RRF scores, which carry only ranks.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tqdm import tqdm

from vestige.bench.data import load_locomo, load_longmemeval
from vestige.bench.runner import DEFAULT_CACHE, shared_chunker
from vestige.memory import Memory
from vestige import lexical
from vestige.embed import get_embedder
from vestige.embed.cache import EmbeddingCache

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
OFFTOPIC = Path(__file__).with_name("data") / "offtopic_questions.txt"
FLOORS = sorted([round(0.05 * i, 2) for i in range(0, 15)] + [0.18])  # 0.18: MiniLM's chosen floor


def offtopic_questions() -> list[str]:
    lines = OFFTOPIC.read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def _memory(haystack, chunker, cache) -> Memory:
    memory = Memory(":memory:", chunker=chunker, embed_cache=cache, plan="split")
    memory.add_sessions(haystack.sessions, app="floor")
    return memory


def _best(memory: Memory, question: str) -> float | None:
    return memory.search(question, app="floor", k=1).best_cosine


def _coverage(memory: Memory, question: str) -> float:
    """Share of the question's distinct index terms that occur anywhere in the memory: a second
    absolute signal, recorded for study (the floor itself reads only the cosine)."""
    terms = sorted(set(lexical.analyze(question)))
    if not terms:
        return 0.0
    found = sum(bool(memory.lexical.search("floor", [t], 1, lexical.K1, lexical.B)) for t in terms)
    return found / len(terms)


def run(out: Path, limit: int | None) -> None:
    embedder = get_embedder("minilm")
    cache = EmbeddingCache(DEFAULT_CACHE)
    chunker = shared_chunker(embedder, "split", "chunks")
    off = offtopic_questions()
    rows = []
    lme = load_longmemeval(str(DATA / "longmemeval_s_dev.json.gz"), limit)
    for i, haystack in enumerate(tqdm(lme, desc="longmemeval", unit="question")):
        memory = _memory(haystack, chunker, cache)
        for q in haystack.questions:
            kind = "abstention" if q.abstention else "legitimate"
            rows.append({"dataset": "longmemeval", "id": q.qid, "kind": kind, "question": q.text,
                         "best_cosine": _best(memory, q.text), "coverage": _coverage(memory, q.text)})
        text = off[i % len(off)]
        rows.append({"dataset": "longmemeval", "id": f"{haystack.questions[0].qid}:offtopic",
                     "kind": "offtopic", "question": text, "best_cosine": _best(memory, text), "coverage": _coverage(memory, text)})
        memory.close()
    for haystack in tqdm(load_locomo(str(DATA / "locomo_dev.json.gz"), limit), desc="locomo", unit="conversation"):
        memory = _memory(haystack, chunker, cache)
        for q in haystack.questions:
            kind = "abstention" if q.abstention else "legitimate"
            rows.append({"dataset": "locomo", "id": q.qid, "kind": kind, "question": q.text,
                         "best_cosine": _best(memory, q.text), "coverage": _coverage(memory, q.text)})
        for j, text in enumerate(off):
            rows.append({"dataset": "locomo", "id": f"{haystack.unit}:offtopic{j}", "kind": "offtopic",
                         "question": text, "best_cosine": _best(memory, text), "coverage": _coverage(memory, text)})
        memory.close()
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "rows.jsonl", "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    (out / "summary.md").write_text(render(table(rows)))
    print(render(table(rows)))


def table(rows: list[dict]) -> list[dict]:
    """floor -> counts per kind of questions whose best cosine is under it (answered with nothing)."""
    out = []
    for floor in FLOORS:
        line: dict = {"floor": floor}
        for kind in ("legitimate", "abstention", "offtopic"):
            members = [r for r in rows if r["kind"] == kind]
            cut = sum(1 for r in members if r["best_cosine"] is None or r["best_cosine"] < floor)
            line[kind] = (cut, len(members))
        out.append(line)
    return out


def render(lines: list[dict]) -> str:
    text = ["| floor (cosine) | legitimate questions lost | abstention answered with nothing | off-topic answered with nothing |",
            "|---|---|---|---|"]
    for line in lines:
        cells = [f"{c}/{n} ({c / n:.1%})" if n else "-" for c, n in (line[k] for k in ("legitimate", "abstention", "offtopic"))]
        text.append(f"| {line['floor']:.2f} | " + " | ".join(cells) + " |")
    return "\n".join(text) + "\n"


def check(folder: Path) -> int:
    rows = [json.loads(line) for line in open(folder / "rows.jsonl")]
    expected = render(table(rows))
    if (folder / "summary.md").read_text() != expected:
        print(f"{folder}/summary.md does not match its rows", file=sys.stderr)
        return 1
    print(f"{folder}: summary matches {len(rows)} rows")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/floor_calibration"))
    parser.add_argument("--limit", type=int, help="Only the first N haystacks of each dataset.")
    parser.add_argument("--check", type=Path, help="Recompute the table of a finished run and compare.")
    args = parser.parse_args()
    sys.exit(check(args.check) if args.check else run(args.out, args.limit) or 0)
