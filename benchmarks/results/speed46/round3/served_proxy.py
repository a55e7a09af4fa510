"""Memory.search with the question embedded by MiniLM (its vector then replaced by the benchmark's
looked-up one, so the store's hashed vectors rank as in read_speed), the lexical half deferred
(OVERLAP off) or overlapped with the embedding (OVERLAP on), alternating per question."""
import sys, os, time, statistics, gc
import numpy as np
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[3]))
import read_speed as rs
from diarist.embed.onnx_minilm import MiniLMOnnxEmbedder
from diarist.read import search as S
size = int(sys.argv[1]); n = int(sys.argv[2]) if len(sys.argv) > 2 else 100
label = sys.argv[3] if len(sys.argv) > 3 else "branch"
texts = rs.questions("longmemeval", n); rs.ask(texts)
model = MiniLMOnnxEmbedder()
Base = type(rs.embedder_for("diarist"))
class Embedded(Base):
    def embed_query(self, texts):
        model.embed_query(texts)
        return super().embed_query(texts)
from diarist.memory import Memory
mem = Memory(f"/tmp/diarist-read-speed/{label}-longmemeval-{size}.sqlite", embedder=Embedded(), floor=None)
modes = {"deferred": float("inf"), "overlapped": S.OVERLAP_EMBEDDING_S}
for t in texts[:10]:
    mem.search(t, app=rs.APP, k=10)
gc.collect(); gc.freeze()
res = {m: [] for m in modes}; emb = []
for r in range(3):
    for i, t in enumerate(texts):
        order = list(modes) if (i + r) % 2 == 0 else list(modes)[::-1]
        for m in order:
            S.OVERLAP_EMBEDDING_S = modes[m]
            s = time.perf_counter(); mem.search(t, app=rs.APP, k=10); res[m].append((time.perf_counter() - s) * 1000)
        s = time.perf_counter(); model.embed_query([t]); emb.append((time.perf_counter() - s) * 1000)
print(f"{size} load {os.getloadavg()}", {m: round(statistics.median(v), 3) for m, v in res.items()},
      "embedding alone", round(statistics.median(emb), 3))
