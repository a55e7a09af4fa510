"""Every hit of this tree's read path equals main fe79a06's, field by field, on the benchmark's store."""
import sys, json
from pathlib import Path
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[3]))
import read_speed as rs
size = int(sys.argv[1])
texts = rs.questions("longmemeval", 200); rs.ask(texts)
work = Path("/tmp/diarist-read-speed")
pk = rs.import_as("/tmp/trees/fe79a06/src", "main", work)
import importlib
def rows_of(package, label):
    mem = importlib.import_module(f"{package}.memory").Memory(f"/tmp/diarist-read-speed/{label}-longmemeval-{size}.sqlite",
                                                              embedder=rs.embedder_for(package), floor=None)
    rrf = mem.derive(fusion="rrf"); vo = mem.derive(lexical_fusion=False); bo = mem.derive(dense_weight=0.0)
    when = "2024-06-01T12:00:00"
    return {
        "hybrid k=32": lambda q: mem.search(q, app=rs.APP, k=32, now=when),
        "hybrid k=200": lambda q: mem.search(q, app=rs.APP, k=200, now=when),
        "hybrid k=10 explain": lambda q: mem.search(q, app=rs.APP, k=10, now=when, explain=True),
        "no second stage k=200": lambda q: mem.search(q, app=rs.APP, k=200, rerank=False, now=when),
        "vectors only k=200": lambda q: vo.search(q, app=rs.APP, k=200, rerank=False, now=when),
        "BM25 order k=200": lambda q: bo.search(q, app=rs.APP, k=200, rerank=False, now=when),
        "rrf k=50": lambda q: rrf.search(q, app=rs.APP, k=50, now=when),
        "context": lambda q: mem.context(q, app=rs.APP, now=when),
    }
main, branch = rows_of(pk, "main"), rows_of("diarist", "main")  # one file: the dates are the build's
def canon(result):
    if hasattr(result, "to_dict") and not isinstance(result, list):
        d = result.to_dict() if callable(getattr(result, "to_dict")) else result
        return json.dumps(d, sort_keys=True, default=str)
    return json.dumps([h.to_dict() for h in result] + [list(result.notes)], sort_keys=True, default=str)
differ = {}
for row in main:
    n = 0
    for q in texts:
        a, b = main[row](q), branch[row](q)
        if row == "context":
            a, b = str(a), str(b)
        else:
            a, b = canon(a), canon(b)
        n += a != b
    differ[row] = n
    print(f"{size} {row:25s} {len(texts)} questions, {n} differ", flush=True)
