"""Calibrate the absolute relevance floor on real data, through the real search path.

For every haystack (each LongMemEval question's own sessions; each LoCoMo conversation) the
script asks, with no floor: the dataset's legitimate questions, its abstention questions
(LongMemEval `_abs`: the answer is not in the history), and off-topic questions the memory
knows nothing about (benchmarks/data/offtopic_questions.txt, written before any score was
seen; LongMemEval haystacks each get one, round-robin, so every off-topic question is asked 4
times; every LoCoMo conversation gets all 60). It records the best dense cosine search saw
(``Results.best_cosine``) and the evidence floor's question-side signals (lexical coverage;
``personal``: first/second person or a name the memory holds whole, diarist.read.floor), one row per
question, and derives the cosine floor's trade-off table from the rows: floor -> legitimate
questions lost, abstention and off-topic questions answered with nothing
(``benchmarks/floor_cv.py`` cross-validates the evidence floor on the same rows).

    python benchmarks/floor.py --out benchmarks/results/floor/calibration            # both datasets
    python benchmarks/floor.py --check benchmarks/results/floor/calibration          # recompute the tables
    python benchmarks/floor.py --personal locomo longmemeval --out benchmarks/results/floor/calibration
    python benchmarks/floor.py --signals benchmarks/results/floor/calibration        # add the signals to rows
    python benchmarks/floor.py --impersonal --out benchmarks/results/floor/calibration

``--impersonal`` asks legitimate questions rewritten without first/second person or the memory's
people (benchmarks/data/impersonal_legit_questions.tsv) into rows_impersonal.jsonl.gz.
``--personal`` asks the personal-sounding off-topic questions
(benchmarks/data/offtopic_personal_questions.txt) into rows_personal.jsonl.gz. ``--signals``
re-reads only the lexical indexes (built with the instant hash embedder: an index does not
depend on the embedder) to add the question-side signals to rows recorded before they existed
(or re-derive ``personal`` when its definition changes, recorded as ``personal_signal``),
checking that each row's coverage comes out as recorded. Rows are gzipped JSON lines, written
the same way every time (``diarist.bench.rows.gzip_bytes``).

The floor sits on the cosine, not on RRF scores, which carry only ranks.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tqdm import tqdm

from diarist import lexical
from diarist.bench.data import load_locomo, load_longmemeval
from diarist.bench.rows import gzip_bytes, read_jsonl
from diarist.bench.runner import DEFAULT_CACHE, shared_chunker
from diarist.memory import Memory
from diarist.read import floor as floor_evidence
from diarist.embed import get_embedder
from diarist.embed.cache import EmbeddingCache

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
OFFTOPIC = Path(__file__).with_name("data") / "offtopic_questions.txt"
PERSONAL = Path(__file__).with_name("data") / "offtopic_personal_questions.txt"
IMPERSONAL = Path(__file__).with_name("data") / "impersonal_legit_questions.tsv"
FLOORS = sorted([round(0.05 * i, 2) for i in range(0, 15)] + [0.18])  # 0.18: MiniLM's chosen floor


#: How ``personal`` was derived: a name counts when the memory holds every word of it (before:
#: any one word; diarist.read.floor.is_personal).
PERSONAL_SIGNAL = "name held whole"

ROWS, PERSONAL_ROWS, IMPERSONAL_ROWS = "rows.jsonl.gz", "rows_personal.jsonl.gz", "rows_impersonal.jsonl.gz"


def offtopic_questions(path: Path = OFFTOPIC) -> list[str]:
    lines = path.read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def _chunker_and_cache():
    """The default model's split-view chunker and the lab's embedding cache, as the runs use them."""
    return shared_chunker(get_embedder("minilm"), "split", "chunks"), EmbeddingCache(DEFAULT_CACHE)


def _write_rows(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip_bytes("".join(json.dumps(row) + "\n" for row in rows).encode()))


def _memory(haystack, chunker, cache) -> Memory:
    memory = Memory(":memory:", chunker=chunker, embed_cache=cache, plan="split", floor=None)
    memory.add_sessions(haystack.sessions, app="floor")
    return memory


def _evidence(memory: Memory, question: str) -> dict:
    """The evidence floor's question-side signals, as the library computes them from the
    question and the memory's lexical index."""
    held = lambda terms: memory.lexical.held("floor", terms)  # noqa: E731
    return {"coverage": floor_evidence.coverage(question, held), "personal": floor_evidence.is_personal(question, held)}


def _row(memory: Memory, dataset: str, row_id: str, kind: str, question: str) -> dict:
    best = memory.search(question, app="floor", k=1).best_cosine
    return {"dataset": dataset, "id": row_id, "kind": kind, "question": question, "best_cosine": best,
            **_evidence(memory, question), "lexical_version": lexical.VERSION, "personal_signal": PERSONAL_SIGNAL}


def _kind(question) -> str:
    return "abstention" if question.abstention else "legitimate"


def run(out: Path, limit: int | None) -> None:
    chunker, cache = _chunker_and_cache()
    off = offtopic_questions()
    rows = []
    lme = load_longmemeval(str(DATA / "longmemeval_s_dev.json.gz"), limit)
    for i, haystack in enumerate(tqdm(lme, desc="longmemeval", unit="question")):
        memory = _memory(haystack, chunker, cache)
        rows += [_row(memory, "longmemeval", q.qid, _kind(q), q.text) for q in haystack.questions]
        rows.append(_row(memory, "longmemeval", f"{haystack.questions[0].qid}:offtopic", "offtopic", off[i % len(off)]))
        memory.close()
    for haystack in tqdm(load_locomo(str(DATA / "locomo_dev.json.gz"), limit), desc="locomo", unit="conversation"):
        memory = _memory(haystack, chunker, cache)
        rows += [_row(memory, "locomo", q.qid, _kind(q), q.text) for q in haystack.questions]
        rows += [_row(memory, "locomo", f"{haystack.unit}:offtopic{j}", "offtopic", text) for j, text in enumerate(off)]
        memory.close()
    _write_rows(out / ROWS, rows)
    (out / "summary.md").write_text(render(table(rows)))
    print(render(table(rows)))


def run_personal(out: Path, datasets: list[str], limit: int | None) -> None:
    """The personal-sounding off-topic questions alone (``offtopic_personal`` rows, never fitted
    on), asked as the impersonal ones are: one per LongMemEval haystack, round-robin (each
    question about 8 times); all 30 of every LoCoMo conversation."""
    chunker, cache = _chunker_and_cache()
    personal = offtopic_questions(PERSONAL)
    rows = []
    if "locomo" in datasets:
        for haystack in tqdm(load_locomo(str(DATA / "locomo_dev.json.gz"), limit), desc="locomo", unit="conversation"):
            memory = _memory(haystack, chunker, cache)
            rows += [_row(memory, "locomo", f"{haystack.unit}:personal{j}", "offtopic_personal", text)
                     for j, text in enumerate(personal)]
            memory.close()
    if "longmemeval" in datasets:
        lme = load_longmemeval(str(DATA / "longmemeval_s_dev.json.gz"), limit)
        for i, haystack in enumerate(tqdm(lme, desc="longmemeval", unit="question")):
            memory = _memory(haystack, chunker, cache)
            rows.append(_row(memory, "longmemeval", f"{haystack.questions[0].qid}:personal", "offtopic_personal",
                             personal[i % len(personal)]))
            memory.close()
    _write_rows(out / PERSONAL_ROWS, sorted(rows, key=lambda r: (r["dataset"], r["id"])))


def impersonal_questions(path: Path = IMPERSONAL) -> dict[str, str]:
    """Dev question id -> the same question asked impersonally (benchmarks/data)."""
    pairs = (line.split("\t") for line in path.read_text().splitlines() if line.strip() and not line.startswith("#"))
    return {qid: text.strip() for qid, text in pairs}


def run_impersonal(out: Path, limit: int | None) -> None:
    """The impersonal rewrites of legitimate questions (``legitimate_impersonal`` rows), each
    asked of its own question's haystack, into rows_impersonal.jsonl.gz."""
    chunker, cache = _chunker_and_cache()
    rewrites = impersonal_questions()
    rows = []
    haystacks = [("longmemeval", h) for h in load_longmemeval(str(DATA / "longmemeval_s_dev.json.gz"), limit)]
    haystacks += [("locomo", h) for h in load_locomo(str(DATA / "locomo_dev.json.gz"), limit)]
    for dataset, haystack in tqdm(haystacks, desc="impersonal", unit="haystack"):
        asked = [q for q in haystack.questions if q.qid in rewrites]
        if not asked:
            continue
        memory = _memory(haystack, chunker, cache)
        rows += [{**_row(memory, dataset, f"{q.qid}:impersonal", "legitimate_impersonal", rewrites[q.qid]),
                  "rewrite_of": q.text} for q in asked]
        memory.close()
    missing = set(rewrites) - {row["id"].rsplit(":", 1)[0] for row in rows}
    if missing and limit is None:
        raise SystemExit(f"rewrites of no dev question: {sorted(missing)}")
    _write_rows(out / IMPERSONAL_ROWS, rows)


def _signal_memory(haystack) -> Memory:
    """The haystack's lexical index without vectors: the floor's question-side evidence reads
    only the index, which does not depend on the embedder (the hash one is instant)."""
    memory = Memory(":memory:", embedder="hash", plan="split", floor=None)
    memory.add_sessions(haystack.sessions, app="floor")
    return memory


def _signals(memory: Memory, row: dict) -> dict:
    evidence = _evidence(memory, row["question"])
    # The coverage is re-derived by this diarist's analyzer (version 3: stems), which the
    # library's floor reads; the best cosine, from the dense channel, does not depend on it.
    return {**row, **evidence, "lexical_version": lexical.VERSION, "personal_signal": PERSONAL_SIGNAL}


def _coverage_moved(old: dict, new: dict) -> bool:
    """A row already on this analyzer whose coverage does not come out as recorded (the index is
    rebuilt with another embedder: only a question-side signal whose definition changed may move)."""
    return (old.get("lexical_version") == lexical.VERSION and "coverage" in old
            and abs(new["coverage"] - old["coverage"]) > 1e-12)


def add_signals(folder: Path) -> int:
    """Record the question-side evidence (``personal``) on every row of rows.jsonl.gz,
    rows_personal.jsonl.gz and rows_impersonal.jsonl.gz, computed by the library's floor over each
    haystack's lexical index.
    Writes nothing (and returns 1) when a row's coverage does not come out as recorded."""
    files = [folder / name for name in (ROWS, PERSONAL_ROWS, IMPERSONAL_ROWS) if (folder / name).exists()]
    tables = {path: read_jsonl(path) for path in files}
    by_haystack: dict[tuple[str, str], list[dict]] = {}
    for rows in tables.values():
        for row in rows:
            unit = row["id"].split(":")[0]
            by_haystack.setdefault((row["dataset"], unit), []).append(row)
    done: dict[int, dict] = {}
    haystacks = [("longmemeval", h, h.questions[0].qid) for h in load_longmemeval(str(DATA / "longmemeval_s_dev.json.gz"))]
    haystacks += [("locomo", h, h.unit) for h in load_locomo(str(DATA / "locomo_dev.json.gz"))]
    for dataset, haystack, unit in tqdm(haystacks, desc="signals", unit="haystack"):
        rows = by_haystack.get((dataset, unit), [])
        if not rows:
            continue
        memory = _signal_memory(haystack)
        for row in rows:
            done[id(row)] = _signals(memory, row)
        memory.close()
    moved = [row for rows in tables.values() for row in rows if id(row) in done and _coverage_moved(row, done[id(row)])]
    for row in moved:
        print(f"{row['dataset']} {row['id']}: coverage {done[id(row)]['coverage']} where {row['coverage']} was recorded",
              file=sys.stderr)
    if moved:
        return 1
    flipped = sum(row.get("personal") != done[id(row)]["personal"] for rows in tables.values() for row in rows
                  if id(row) in done)
    print(f"coverage as recorded on every row; personal changed on {flipped}")
    for path, rows in tables.items():
        assert all(id(row) in done for row in rows), f"{path}: rows of no dev haystack"
        _write_rows(path, [done[id(row)] for row in rows])
    return 0


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
    rows = read_jsonl(folder / ROWS)
    expected = render(table(rows))
    if (folder / "summary.md").read_text() != expected:
        print(f"{folder}/summary.md does not match its rows", file=sys.stderr)
        return 1
    print(f"{folder}: summary matches {len(rows)} rows")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/floor/calibration"))
    parser.add_argument("--limit", type=int, help="Only the first N haystacks of each dataset.")
    parser.add_argument("--check", type=Path, help="Recompute the table of a finished run and compare.")
    parser.add_argument("--personal", nargs="*", choices=["locomo", "longmemeval"],
                        help="Ask only the personal-sounding off-topic questions (rows_personal.jsonl.gz).")
    parser.add_argument("--signals", type=Path, help="Add the question-side evidence to a finished run's rows.")
    parser.add_argument("--impersonal", action="store_true",
                        help="Ask only the impersonal rewrites of legitimate questions (rows_impersonal.jsonl.gz).")
    args = parser.parse_args()
    if args.impersonal:
        sys.exit(run_impersonal(args.out, args.limit) or 0)
    if args.signals:
        sys.exit(add_signals(args.signals))
    if args.personal:
        sys.exit(run_personal(args.out, args.personal, args.limit) or 0)
    sys.exit(check(args.check) if args.check else run(args.out, args.limit) or 0)
