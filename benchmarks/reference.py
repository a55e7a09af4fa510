"""The tables of BENCHMARKS.md, computed from the committed results (nothing is run).

    python benchmarks/reference.py                 # every table
    python benchmarks/reference.py scale peers     # some of them

Each table of BENCHMARKS.md that this prints is printed here byte for byte, and
``tests/lab/test_reference.py`` checks that it still is: a figure of the reference is a cell of a
committed file, re-derived by this command. The files themselves come from the commands their
manifests name (``benchmarks/results/<topic>/<name>/manifest.json``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def _json(path: str) -> dict:
    return json.loads((RESULTS / path).read_text(encoding="utf-8"))


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _pct(part: int, whole: int) -> str:
    return f"{part} / {whole:,} ({100 * part / whole:.1f}%)"


# -- retrieval -----------------------------------------------------------------------------------

RETRIEVAL_RUNS = [  # (run folder under results/DATASET, what it is)
    ("default", "**what ships**: convex fusion (dense weight 0.75; 0.95 where the best BM25 is under 3) + evidence second stage (time)"),
    ("fused-only", "the convex fusion alone, no second stage"),
    ("rrf", "the same channels fused by Reciprocal Rank Fusion (k = 60)"),
    ("vectors-only", "the dense channel alone (MiniLM)"),
    ("bm25-only", "the BM25 channel alone (stemmed)"),
]
EXPLORED = {  # dataset -> (run folder under results/, what it is)
    "locomo": ("explore-e5/locomo/default-w0.95", "exploration: e5-small vectors, its own weight 0.95 (not shipped)"),
    "longmemeval": ("explore-e5/longmemeval/default-w0.95", "exploration: e5-small vectors, its own weight 0.95 (not shipped)"),
}
CELLS = ["r_any@1", "r_any@5", "r_any@10", "r_all@10", "ndcg@10", "mrr"]


def retrieval(dataset: str) -> str:
    """Headline metrics of the shipped default, its single channels and its peers, set ``all``."""
    runs = [(f"{dataset}/{name}", f"`{name}`", what) for name, what in RETRIEVAL_RUNS]
    folder, what = EXPLORED[dataset]
    runs.append((folder, f"`{folder.split('/')[0]}`", what))
    rows = []
    for folder, name, what in runs:
        cells = _json(f"{folder}/summary.json")["overall"]["all"]
        rows.append([name, what, str(cells["n"]), *(f"{cells[c]:.4f}" for c in CELLS)])
    return _table(["run", "what", "n", "R@1", "R@5", "R@10", "R_all@10", "NDCG@10", "MRR"], rows)


def fusion() -> str:
    """The fusion functions out of sample (fitted on one dataset and tested on the other / 5-fold)."""
    found = _json("fusion/fusion_cv.json")["fusions"]
    rows = []
    for name in ("vectors-only", "bm25-only", "rrf", "shipped-convex", "min-max", "convex-session"):
        cells = []
        for dataset in ("locomo", "longmemeval"):
            for metric in ("r_any@1", "r_any@5", "ndcg@10"):
                a, b = found[name]["cross_dataset"][dataset][metric], found[name]["kfold"][dataset][metric]
                cells.append(f"{a:.4f}" if a == b else f"{a:.4f} / {b:.4f}")
        rows.append([f"`{name}`", *cells])
    return _table(["fusion", "LoCoMo R@1", "R@5", "NDCG@10", "LongMemEval R@1", "R@5", "NDCG@10"], rows)


# -- speed and scale -------------------------------------------------------------------------------


def scale() -> str:
    """Issue 13's figures, one machine, one day (scale/s24): 1M runs, then 100k and the rest."""
    rows = []
    for n in (1, 2, 3):
        r = _json(f"scale/s24/scale_1m_r{n}.json")
        p, cold = r["p50_ms"], r["cold_hnsw"]
        rows.append([f"1M, run {n}", f"{p['numpy_matmul']:.1f} ms", f"{p['bm25']:.2f} ms", f"{p['dense_hnsw']:.2f} ms",
                     f"**{p['hybrid_hnsw']:.2f} ms**", f"{r['hnsw_recall_at_200']['mean']:.3f} / {r['hnsw_recall_at_200']['min']:.3f}",
                     f"{cold['import_s'] + cold['open_plus_first_query_s']:.2f} s"])
    r = _json("scale/s24/scale_100k.json")
    p, cold = r["p50_ms"], r["cold_exact"]
    rows.append(["100k", f"{p['numpy_matmul']:.2f} ms", f"{p['bm25']:.2f} ms", f"{p['dense_exact']:.2f} ms (exact)",
                 f"**{p['hybrid_exact']:.2f} ms** = {p['hybrid_exact'] / p['numpy_exact']:.2f}x numpy exact", "1.0 (exact)",
                 f"{cold['import_s'] + cold['open_plus_first_query_s']:.2f} s"])
    table = _table(["chunks", "numpy f32 matmul (speed gauge)", "BM25 alone", "dense alone", "hybrid p50 (what `auto` ships)",
                    "dense recall@200 (mean / min)", "cold start (import + open + first query)"], rows)
    builds = [_json(f"scale/s24/bulk_100k_r{n}.json")["build"]["store_write_s"] for n in (1, 2, 3)]
    resident = _json("scale/s24/resident_1m.json")["resident_hnsw"]
    ingest = _json("scale/s24/perf_ingest.json")["ingest"]
    facts = _table(["measure", "figure", "goal"], [
        ["bulk build of 100k chunks with known vectors, one `put_items` call (3 runs)",
         " / ".join(f"{s:.1f} s" for s in builds), "<= 10 s"],
        ["resident memory at 1M after 100 questions / raw int8 vectors + postings",
         f"{resident['rss_after_queries_mb']:.0f} MB = {resident['ratio_of_rss_to_raw']:.3f}x", "<= 1.2x"],
        ["share of an ingest spent outside embedding (80 LoCoMo sessions, real model)",
         f"{100 * ingest['overhead_share']:.1f}%", "<= 10%"],
    ])
    return table + "\n\n" + facts


PEER_SYSTEMS = ["numpy", "bm25s_numpy", "sqlite_fts5_numpy", "chromadb", "lancedb", "diarist", "diarist_exact"]


def peers() -> str:
    """p50 (ratio to numpy's exact scan in the same process), dense recall@200 and RSS, by size."""
    runs = [(label, _json(f"peers/s24/peers_{label}.json")) for label in ("10k", "100k", "1m")]
    rows = []
    for name in PEER_SYSTEMS:
        cells = []
        for _label, run in runs:
            s = run["systems"].get(name)
            if s is None or "p50_ms" not in s:
                cells.append("not run (build estimated at 30-40 min)")
                continue
            recall = s.get("dense_recall_at_200")
            recall_text = "exact" if recall is None else f"{recall['mean']:.3f}"
            mark = " \\*" if name in run.get("rows_from_an_earlier_run", {}).get("systems", []) else ""
            cells.append(f"{s['p50_ms']:.2f} ms ({s['ratio_p50_to_numpy']:.2f}x), {recall_text}, {s['rss_mb']:.0f} MB{mark}")
        rows.append([f"`{name}`", *cells])
    return _table(["system", "10k chunks: p50 (x numpy), recall@200, RSS", "100k", "1M"], rows)


def postgres() -> str:
    """The PostgreSQL store: many small apps in one schema, and one large app."""
    many = [(_json(f"postgres/scale/{f}")["multi_app"], label) for f, label in
            (("pg_scale_100k.json", "100 apps x 1,000"), ("pg_scale_1m_apps.json", "1,000 apps x 1,000"))]
    rows = [[f"{label} chunks, hybrid of one app (`auto`: exact scan)", f"{m['hybrid_auto']['p50_ms']} / {m['hybrid_auto']['p95_ms']} ms",
             f"hits of another app: {m['isolation']['foreign_hits']} of {m['isolation']['hits_checked']:,}"] for m, label in many]
    for f, label in (("pg_scale_100k.json", "one app of 100k"), ("pg_scale_300k_single.json", "one app of 300k"),
                     ("pg_scale_1m_single.json", "one app of 1M")):
        s = _json(f"postgres/scale/{f}")["single_app"]
        big = s["dense_by_size"]["big"]
        rows.append([f"{label}, hybrid (`auto`: pgvector HNSW from 100k)", f"{s['hybrid_auto']['p50_ms']} / {s['hybrid_auto']['p95_ms']} ms",
                     f"dense exact {big['dense_exact']['p50_ms']} ms, HNSW {big['dense_hnsw']['p50_ms']} ms, "
                     f"HNSW recall@200 {big['recall_at_200']}"])
    return _table(["store", "p50 / p95", "beside it"], rows)


# -- the floor -------------------------------------------------------------------------------------


def floor() -> str:
    """The relevance floor: every fit against what it costs, out of sample where fitted."""
    cv = _json("floor/calibration/evidence_floor_cv.json")
    rewrites = _json("floor/calibration/impersonal_rewrites.json")["floors"]

    def row(shown: str, fit: dict, rewritten: str) -> list[str]:
        return [shown, _pct(fit["legitimate_lost"], fit["legitimate"]), _pct(fit["offtopic_empty"], fit["offtopic"]),
                _pct(fit["offtopic_personal_empty"], fit["offtopic_personal"]), rewritten]

    def lost(name: str) -> str:
        found = rewrites[name]["rewrites_lost"]
        return f"{found['locomo'] + found['longmemeval']} of 208"

    keys = ("legitimate_lost", "legitimate", "offtopic_empty", "offtopic", "offtopic_personal_empty", "offtopic_personal")
    out_of_sample = {"fitted on one dataset, tested on the other": list(cv["cross_dataset"].values()),
                     "5-fold": cv["five_fold"]["folds"]}
    rows = [row('cosine 0.18 (`floor="cosine"`)', rewrites['cosine 0.18 (floor="cosine")'], lost('cosine 0.18 (floor="cosine")')),
            row("**evidence floor (ships)**, in sample: (0.25, 0.80)", rewrites["evidence, conservative fit (shipped)"],
                lost("evidence, conservative fit (shipped)"))]
    for name, parts in out_of_sample.items():
        rows.append(row(f"evidence floor, {name}", {k: sum(p[k] for p in parts) for k in keys}, "-"))
    rows.append(row("fit trusting the exemption (not shipped), in sample: (0.45, 0.85)",
                    rewrites["evidence, fit trusting the exemption"], lost("evidence, fit trusting the exemption")))
    return _table(["floor", "legitimate questions lost", "off-topic answered with nothing",
                   "personal-sounding off-topic answered with nothing", "impersonal rewrites answered with nothing"], rows)


TABLES: dict[str, Callable[[], str]] = {
    "retrieval-longmemeval": lambda: retrieval("longmemeval"),
    "retrieval-locomo": lambda: retrieval("locomo"),
    "fusion": fusion,
    "scale": scale,
    "peers": peers,
    "postgres": postgres,
    "floor": floor,
}


def main(argv: list[str] | None = None) -> int:
    names = (argv if argv is not None else sys.argv[1:]) or list(TABLES)
    unknown = [n for n in names if n not in TABLES]
    if unknown:
        print(f"unknown table {', '.join(unknown)}; choose from {', '.join(TABLES)}", file=sys.stderr)
        return 2
    for name in names:
        print(f"<!-- python benchmarks/reference.py {name} -->\n{TABLES[name]()}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
