import sys, time, statistics, gc, os, random
from pathlib import Path
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[3]))
import read_speed as rs
mode = sys.argv[1]
texts = rs.questions("longmemeval", 150); rs.ask(texts)
work = Path("/tmp/diarist-read-speed")
trees = [("e0b9e37", "/tmp/trees/e0b9e37/src", "e0b9e37"), ("main", "/tmp/trees/fe79a06/src", "main"),
         ("mine", "/tmp/trees/mine/src", "mine"), ("speed46", "/tmp/trees/speed46/src", "speed46")]
calls = {}
scan = rs.numpy_scan("/tmp/diarist-read-speed/main-longmemeval-10000.sqlite")
calls[("numpy", "numpy")] = lambda q: scan(rs.QUESTION_VECTORS[q])
for label, src, db in trees:
    pk = rs.import_as(src, label, work)
    mem, rows = rs.searches(pk, f"/tmp/diarist-read-speed/{db}-longmemeval-10000.sqlite", rs.QUESTION_VECTORS)
    for row, fn in rows.items():
        calls[(label, row)] = fn
gc.collect(); gc.freeze()
keys = list(calls)
for t in texts[:20]:
    for k in keys: calls[k](t)
rng = random.Random(5)
per = {k: [] for k in keys}
for r in range(3):
    times = {k: [] for k in keys}
    for i, t in enumerate(texts):
        if mode == "shuffle":
            order = keys[:]; rng.shuffle(order)
        else:
            turn = (i * 7 + r) % len(keys); order = keys[turn:] + keys[:turn]
        for k in order:
            s = time.perf_counter(); calls[k](t); times[k].append((time.perf_counter() - s) * 1000)
    for k in keys: per[k].append(statistics.median(times[k]))
rows = [r for (l, r) in keys if l == "main"]
print(mode, "load", os.getloadavg()[0], "numpy", round(statistics.median(per[("numpy", "numpy")]), 2))
for row in rows:
    print(f"{row:32s}", "  ".join(f"{l} {statistics.median(per[(l, row)]):.2f}" for l, _, _ in trees))
