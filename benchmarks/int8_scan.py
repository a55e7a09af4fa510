"""The exact dense scan's integer first pass, measured alone on a scale.py database.

Times, side by side in one process (p50 over the scale questions, median over passes):
numpy's float32 ``M @ q`` and its top-200 (the floor scale.py compares with), the int8 kernel
(``diarist.vectors.int8_scan``) prepacked on one and on two threads and unpacked, and the whole
``ExactDenseIndex.search``; then how often the bound proved the top from the first 2 x depth
candidates, and whether the rankings equal the float32 scan's.

    python benchmarks/scale.py --size 100000 --sessions-per-call 0 --workdir DIR   # once
    python benchmarks/int8_scan.py DIR/scale-100000.sqlite --out benchmarks/results/int8/scan-100k/int8_scan_100k.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import scale  # noqa: E402

from diarist.embed.base import dequantize  # noqa: E402
from diarist.ranking import top  # noqa: E402
from diarist.store import open_store  # noqa: E402
from diarist.vectors import exact, int8_scan  # noqa: E402

DEPTH = 200


def p50(fn, inputs: list[np.ndarray]) -> float:
    lat = []
    for q in inputs:
        t0 = time.perf_counter()
        fn(q)
        lat.append((time.perf_counter() - t0) * 1e3)
    return float(np.percentile(lat, 50))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("database")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    path = Path(args.database)
    with gzip.open(scale.LONGMEMEVAL) as f:
        texts, queries = scale.queries(json.load(f), args.queries, path)
    store = open_store(str(path), create=False)
    batch = store.read_vectors(scale.APP, 0)
    matrix, ids = dequantize(batch.vectors), batch.ids
    quantised = [int8_scan.quantise(q[None])[0] for q in queries]
    codes = int8_scan.codes_of(batch.vectors)
    kernels = {}
    for threads in (2, 1):  # 2 first: the unpacked session, made at the first use, gets 2 as shipped
        int8_scan.THREADS = threads
        t0 = time.perf_counter()
        kernels[threads] = int8_scan.PackedProducts(batch.vectors)
        kernels[f"pack_{threads}_s"] = time.perf_counter() - t0
    int8_scan.THREADS = 2  # as shipped on this machine (min(2, cores))
    index = exact.ExactDenseIndex(store)
    index.search(scale.APP, queries[0][None], DEPTH)

    def numpy_top(q: np.ndarray) -> np.ndarray:
        scores = matrix @ q
        keep = np.argpartition(-scores, DEPTH - 1)[:DEPTH]
        return ids[keep[np.argsort(-scores[keep])]]

    floats = list(queries)
    methods = {  # name: (function, its inputs: the float queries or the quantised ones)
        "numpy_f32_matmul": (lambda q: matrix @ q, floats),
        "numpy_f32_top200": (numpy_top, floats),
        "int8_packed_1_thread": (kernels[1], quantised),
        "int8_packed_2_threads": (kernels[2], quantised),
        "int8_unpacked_2_threads": (lambda q8: int8_scan.products(codes, q8), quantised),
        "exact_search": (lambda q: index.search(scale.APP, q[None], DEPTH), floats),
    }
    passes: dict[str, list[float]] = {name: [] for name in methods}
    for _ in range(args.repeats):
        for name, (fn, inputs) in methods.items():
            passes[name].append(p50(fn, inputs))
        print(" ".join(f"{n} {v[-1]:.2f}" for n, v in passes.items()), flush=True)
    first_try = same = 0
    real = exact.cosines
    for q in queries:
        calls = []
        exact.cosines = lambda rows, qq: calls.append(len(rows)) or real(rows, qq)
        got = index.search(scale.APP, q[None], DEPTH)
        exact.cosines = real
        first_try += calls == [exact.CANDIDATES_PER_DEPTH * DEPTH]
        same += got == top(ids, matrix @ q, DEPTH)
    result = {
        "database": str(path), "rows": len(ids), "cpus": os.cpu_count(), "load1": os.getloadavg()[0],
        "p50_ms": {n: statistics.median(v) for n, v in passes.items()}, "p50_ms_per_pass": passes,
        "pack_s": {"1_thread": kernels["pack_1_s"], "2_threads": kernels["pack_2_s"]},
        "bound_proved_first_try_share": first_try / len(queries),
        "identical_to_float32_scan_share": same / len(queries),
        "kernel_broken": int8_scan._broken,
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
