"""Study (issue 43): questions in a language over English memories with the multilingual model.
Variants of the read path's scoring, in numpy over what ``benchmarks/xling_capture.py`` recorded
(the product's own vectors, sentence vectors, BM25 scores and chunk languages), each chosen by
leave-one-language-out over XQuAD's development languages and reported out of sample.

The replay: the dense channel's top 200 cosines; a chunk with sentences rescored (1 - w) x its
cosine + w x its sentences' pooled cosine (read.sentences); the convex fusion (read.fusion:
theoretical min-max, a chunk missing from a cut list at the list's last score, the lean on
meaning: dense weight 0.95 when the best raw BM25 is under 3, else 0.75); a chunk in another
language than the question has its lexical score times the agreement. ``--check`` prints the
replay's R@1 at the shipped settings next to the product's (recorded top hits).

Variant families (each a grid; the shipped point is in every grid):
- ``sentences``: w x pooling of the sentences (the best one; the mean of the best two; a softmax
  over them at temperature t) x the lexical agreement;
- ``prf``: on top of the shipped point, pseudo-relevance feedback in vector space for a question
  whose top chunk is in another language: q' = q + b x the mean vector of the first pass's top m
  chunks (the fused ranking's), then scored again;
- ``center``: the memories' mean vector (of the chunk vectors: the database's own) taken off
  chunk, sentence and query vectors (times c) before the cosines, for a question in another
  language than most chunks; ``center-always`` for every question; ``center-candidates`` and
  ``center-sentences`` other means (of the sentences; of the dense candidates' sentences) and the
  sentences alone; ``center-pool``, ``center-prf``, ``abtt`` (the memories' first principal
  directions off too) and ``joint`` on top of it.

- ``--mono``: the shipped choice, the mean taken off for every question (no gate), its share
  chosen over questions across and within languages together (``both_modes``).

    python benchmarks/xling_study.py OUT.json --capture /tmp/xling_dev.npz \
        --mono /tmp/xling_mono_{de,es,ru,zh,ar,hi}.npz [--aside /tmp/xling_aside.npz --at 0.75]
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

import numpy as np

DEV = ("de", "es", "ru", "zh", "ar", "hi")
DEPTH = 200
LEAN_BELOW, LEAN_WEIGHT, DENSE_WEIGHT = 3.0, 0.95, 0.75
SHIPPED = {"w": 0.5, "pool": "max", "agreement": 0.1, "prf_b": 0.0, "prf_m": 1, "center": 0.0, "center_on": "all",
           "mean_of": "chunks", "gate": "other"}


def normalise(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def pooled(sent_cos: np.ndarray, owner: np.ndarray, n_chunks: int, pool: str) -> np.ndarray:
    """[question, chunk] -> its sentences' cosines pooled (NaN: a chunk without sentences)."""
    out = np.full((sent_cos.shape[0], n_chunks), np.nan, np.float32)
    for c in np.unique(owner):
        s = np.sort(sent_cos[:, owner == c], axis=1)[:, ::-1]
        if pool == "max":
            out[:, c] = s[:, 0]
        elif pool == "mean2":
            out[:, c] = s[:, :2].mean(axis=1)
        elif pool.startswith("soft"):
            t = float(pool[4:])
            e = np.exp((s - s[:, :1]) / t)
            out[:, c] = (e * s).sum(axis=1) / e.sum(axis=1)
    return out


def top_mask(scores: np.ndarray, depth: int) -> np.ndarray:
    if scores.shape[1] <= depth:
        return np.ones_like(scores, dtype=bool)
    cut = -np.partition(-scores, depth - 1, axis=1)[:, depth - 1 : depth]
    return scores >= cut


def fuse(cos: np.ndarray, pool: np.ndarray, bm25: np.ndarray, other: np.ndarray, w: float,
         agreement: float, in_dense: np.ndarray | None = None) -> np.ndarray:
    """[question, chunk] -> the fused score, as read.sentences + read.fusion compute it
    (``in_dense``: the dense channel's candidates, by their plain cosines; None: by ``cos``)."""
    in_dense = top_mask(cos, DEPTH) if in_dense is None else in_dense
    blended = np.where(np.isnan(pool), cos, (1 - w) * cos + w * np.nan_to_num(pool)) if w else cos
    listed = np.where(in_dense, blended, np.inf)
    last = listed.min(axis=1, keepdims=True)
    dense_v = np.where(in_dense, blended, last)  # the dense list is cut at 200 of 240: absent = last
    best = np.where(in_dense, blended, -np.inf).max(axis=1, keepdims=True)
    dense_n = np.maximum((dense_v + 1) / np.maximum(best + 1, 1e-12), 0)
    positive = bm25 > 0
    in_lex = positive & top_mask(np.where(positive, bm25, -1), DEPTH)
    top_raw = bm25.max(axis=1, keepdims=True)
    lex_n = np.where(top_raw > 0, bm25 / np.maximum(top_raw, 1e-12), 0) * np.where(other, agreement, 1.0)
    cut = in_lex.sum(axis=1, keepdims=True) >= DEPTH
    lex_last = np.where(in_lex, lex_n, np.inf).min(axis=1, keepdims=True)
    lex_v = np.where(in_lex, lex_n, np.where(cut, lex_last, 0.0))
    weight = np.where(top_raw < LEAN_BELOW, LEAN_WEIGHT, DENSE_WEIGHT)
    weight = np.where(top_raw > 0, weight, 1.0)  # no lexical candidate: the dense order
    return weight * dense_n + (1 - weight) * lex_v


class Language:
    """One language's questions over the captured memory, with what every variant reads."""

    def __init__(self, cap: dict, lang: str, chunk_vectors: np.ndarray, sent_vectors: np.ndarray,
                 owner: np.ndarray, fact: np.ndarray):
        self.lang = lang
        self.q = cap[f"{lang}/query"].astype(np.float32)
        self.bm25 = cap[f"{lang}/bm25"].astype(np.float32)
        self.other = cap[f"{lang}/other"]
        self.gold_fact = cap[f"{lang}/gold"]
        self.top = cap[f"{lang}/top"]
        self.chunks, self.sents, self.owner, self.fact = chunk_vectors, sent_vectors, owner, fact
        self.gold = np.array([np.flatnonzero(fact == g)[0] for g in self.gold_fact])

    def mean(self, p: dict, cos: np.ndarray) -> np.ndarray:
        """[question, dim] the memories' mean vector: of every chunk, of every sentence, or of the
        sentences of the dense channel's first ``candidates`` (top_N)."""
        if p["mean_of"] == "chunks":
            return np.broadcast_to(self.chunks.mean(axis=0), (len(cos), self.chunks.shape[1]))
        if p["mean_of"] == "sents":
            return np.broadcast_to(self.sents.mean(axis=0), (len(cos), self.chunks.shape[1]))
        depth = int(p["mean_of"][3:])
        by_sentence = top_mask(cos, depth)[:, self.owner].astype(np.float32)
        return (by_sentence @ self.sents) / np.maximum(by_sentence.sum(axis=1, keepdims=True), 1)

    def scores(self, p: dict, q: np.ndarray) -> np.ndarray:
        c = p["center"]
        cos, sent_cos = q @ self.chunks.T, q @ self.sents.T
        in_dense = top_mask(cos, DEPTH)  # the channel ranks by the plain cosine; the stage rescores
        if c and not p.get("pcs"):  # (q - cm).(x - cm) / |q - cm| |x - cm|, from the cosines and m's products alone
            mean = self.mean(p, cos)
            m2 = (mean * mean).sum(axis=1, keepdims=True)
            qm = (q * mean).sum(axis=1, keepdims=True)
            qn = np.sqrt(np.maximum(1 - 2 * c * qm + c * c * m2, 1e-12))

            def centered(x: np.ndarray, xq: np.ndarray) -> np.ndarray:
                xm = mean @ x.T
                xn = np.sqrt(np.maximum(1 - 2 * c * xm + c * c * m2, 1e-12))
                return (xq - c * qm - c * xm + c * c * m2) / (qn * xn)

            # gate "other": only where most chunks are in another language than the question (tried);
            # "always": every question, as the product does.
            gate = (self.other.mean(axis=1) > 0.5)[:, None] | (p["gate"] == "always")
            sent_cos = np.where(gate, centered(self.sents, sent_cos), sent_cos)
            if p["center_on"] == "all":
                cos = np.where(gate, centered(self.chunks, cos), cos)
        if p.get("pcs"):  # all but the top: the memories' first principal directions taken off too
            mean = self.chunks.mean(axis=0)
            _, _, vt = np.linalg.svd(self.chunks - mean, full_matrices=False)
            top = vt[: p["pcs"]]

            def transform(x: np.ndarray) -> np.ndarray:
                x = x - c * mean
                return normalise(x - (x @ top.T) @ top)

            gate = (self.other.mean(axis=1) > 0.5)[:, None] | (p["gate"] == "always")
            tq = transform(q)
            sent_cos = np.where(gate, tq @ transform(self.sents).T, q @ self.sents.T)
            cos = np.where(gate, tq @ transform(self.chunks).T, q @ self.chunks.T)
        pool = pooled(sent_cos, self.owner, len(self.chunks), p["pool"])
        return fuse(cos, pool, self.bm25, self.other, p["w"], p["agreement"], in_dense)

    def fused(self, p: dict) -> np.ndarray:
        scores = self.scores(p, self.q)
        if p["prf_b"]:
            first = np.argsort(-scores, axis=1)[:, : p["prf_m"]]
            feedback = self.chunks[first].mean(axis=1)
            q2 = normalise(self.q + p["prf_b"] * feedback)
            cross = self.other[np.arange(len(first)), first[:, 0]]
            scores = self.scores(p, np.where(cross[:, None], q2, self.q))
        return scores

    def hits(self, p: dict) -> np.ndarray:
        scores = self.fused(p)
        return (self.fact[np.argmax(scores, axis=1)] == self.gold_fact).astype(np.int8)

    def recall5(self, p: dict) -> float:
        scores = self.fused(p)
        top5 = np.argsort(-scores, axis=1)[:, :5]
        return float(np.mean([g in self.fact[t] for g, t in zip(self.gold_fact, top5)]))


def load(path: Path) -> tuple[dict, dict[str, Language]]:
    cap = dict(np.load(path, allow_pickle=False))
    chunks = cap["chunk_vectors"].astype(np.float32)
    sents = normalise(cap["sent_vectors"].astype(np.float32))
    langs = sorted({k.split("/")[0] for k in cap if "/" in k})
    return cap, {lang: Language(cap, lang, chunks, sents, cap["sent_owner"], cap["chunk_fact"]) for lang in langs}


def grid(family: str) -> list[dict]:
    if family == "sentences":
        return [SHIPPED | {"w": w, "pool": pool, "agreement": a}
                for w, pool, a in itertools.product([round(0.1 * i, 1) for i in range(9)],
                                                    ["max", "mean2", "soft0.02", "soft0.05"],
                                                    [0.0, 0.05, 0.1, 0.2, 0.3, 0.5])]
    if family == "prf":
        return [SHIPPED | {"prf_b": b, "prf_m": m}
                for b, m in itertools.product([0.0, 0.1, 0.2, 0.3, 0.5, 1.0], [1, 2, 3, 5])]
    if family == "center":
        return [SHIPPED | {"center": c} for c in [0.0, 0.25, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.9, 1.0]]
    if family == "center-candidates":  # the mean of the dense candidates' sentences
        return [SHIPPED] + [SHIPPED | {"center": c, "mean_of": m, "w": w}
                            for c, m, w in itertools.product([0.5, 0.75, 1.0], ["sents", "top200", "top50", "top20"],
                                                             [0.4, 0.5, 0.6])]
    if family == "center-always":  # the memories' mean taken off for every question, in any language
        return [SHIPPED] + [SHIPPED | {"center": c, "gate": "always"} for c in [0.25, 0.5, 0.75, 1.0]]
    if family == "center-pool":  # at the chosen centering, the sentences' pooling and weight again
        return [SHIPPED | {"center": 0.75}] + [SHIPPED | {"center": 0.75, "pool": pool, "w": w}
                                              for pool, w in itertools.product(["max", "mean2", "soft0.02"],
                                                                               [0.3, 0.4, 0.5, 0.6, 0.7])]
    if family == "center-prf":  # at the chosen centering, feedback from the first pass
        return [SHIPPED | {"center": 0.75}] + [SHIPPED | {"center": 0.75, "prf_b": b, "prf_m": m}
                                              for b, m in itertools.product([0.1, 0.2, 0.3, 0.5], [1, 2, 3])]
    if family == "abtt":  # Mu and Viswanath's "all but the top", on the memories' vectors
        return [SHIPPED | {"center": 0.75}] + [SHIPPED | {"center": c, "pcs": d}
                                              for c, d in itertools.product([0.75, 1.0], [1, 2, 3, 5, 10])]
    if family == "joint":  # the memories' mean taken off, with the sentence weight and the agreement
        return [SHIPPED | {"center": c, "w": w, "agreement": a}
                for c, w, a in itertools.product([0.0, 0.5, 0.6, 0.7, 0.75, 0.8, 0.9, 1.0], [0.4, 0.5, 0.6],
                                                 [0.05, 0.1, 0.2])]
    if family == "center-sentences":  # the sentences' cosines only, the mean of the candidates' sentences
        return [SHIPPED] + [SHIPPED | {"center": c, "center_on": "sents", "mean_of": m, "w": w}
                            for c, m, w in itertools.product([0.25, 0.5, 0.75, 1.0], ["sents", "top200"],
                                                 [0.3, 0.4, 0.5, 0.6, 0.7, 0.8])]
    raise ValueError(family)


def lolo(r1: dict[str, np.ndarray], points: list[dict], shipped: int) -> dict:
    means = {lang: h.mean(axis=0) for lang, h in r1.items()}
    folds = {}
    for held in r1:
        others = np.mean([means[x] for x in r1 if x != held], axis=0)
        chosen, best = int(np.argmax(others)), int(np.argmax(means[held]))
        folds[held] = {"chosen": points[chosen], "r@1_out_of_sample": round(float(means[held][chosen]), 4),
                       "best_in_sample": points[best], "r@1_in_sample": round(float(means[held][best]), 4),
                       "r@1_shipped": round(float(means[held][shipped]), 4)}
    return folds


CENTERS = (0.0, 0.25, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.9, 1.0)


def both_modes(cross: dict[str, Language], mono_paths: list[Path], dev: list[str]) -> dict:
    """The shipped choice: the share of the mean taken off for every question (no language gate),
    chosen leaving one language out over both modes (the other five languages' questions over
    English paragraphs and over their own), each held-out language scored out of sample in both."""
    mono = {}
    for path in mono_paths:
        mono |= load(path)[1]
    points = [SHIPPED | {"center": c, "gate": "always"} for c in CENTERS]
    r1 = {(lang, mode): np.array([data[lang].hits(p).mean() for p in points])
          for lang in dev for mode, data in (("cross", cross), ("mono", mono))}
    folds = {}
    for held in dev:
        others = np.mean([v for (lang, _), v in r1.items() if lang != held], axis=0)
        chosen = int(np.argmax(others))
        folds[held] = {"chosen": CENTERS[chosen]} | {
            f"{mode}_r@1_{what}": round(float(r1[(held, mode)][at]), 4)
            for mode in ("cross", "mono") for what, at in (("before", 0), ("out_of_sample", chosen),
                                                           ("best_in_sample", int(np.argmax(r1[(held, mode)]))))}
    every = np.mean(list(r1.values()), axis=0)
    return {"grid": CENTERS, "folds": folds, "chosen_by_all_dev": CENTERS[int(np.argmax(every))],
            "r@1_by_center": {f"{lang}/{mode}": [round(float(v), 4) for v in r1[(lang, mode)]] for lang, mode in r1}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--capture", type=Path, required=True)
    parser.add_argument("--families", default="sentences,prf,center")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--mono", nargs="*", type=Path, default=[],
                        help="captures of questions over their own language's paragraphs (--memory LANG)")
    parser.add_argument("--aside", type=Path, help="a capture of the kept-aside languages, scored once")
    parser.add_argument("--at", type=float, default=0.75, help="the centering chosen on the development languages")
    args = parser.parse_args()
    _, langs = load(args.capture)
    result: dict = {"capture": "benchmarks/xling_capture.py", "shipped": SHIPPED, "check": {}, "families": {}}
    for lang, data in langs.items():
        replay = float(data.hits(SHIPPED).mean())
        product = float(np.mean(data.top == data.gold_fact))
        result["check"][lang] = {"replay_r@1": round(replay, 4), "product_r@1": round(product, 4)}
        print(lang, "replay", round(replay, 4), "product", round(product, 4), flush=True)
    if args.check:
        return
    dev = [x for x in DEV if x in langs]
    for family in [x for x in args.families.split(",") if x]:
        points = grid(family)
        shipped = points.index(SHIPPED) if SHIPPED in points else 0  # else: the first point, the reference
        r1 = {lang: np.stack([langs[lang].hits(p) for p in points], axis=1) for lang in dev}
        folds = lolo(r1, points, shipped)
        all_dev = int(np.argmax(np.mean([h.mean(axis=0) for h in r1.values()], axis=0)))
        result["families"][family] = {"n_points": len(points), "folds": folds, "chosen_by_all_dev": points[all_dev],
                                      "r@1_at_all_dev": {x: round(float(r1[x].mean(axis=0)[all_dev]), 4) for x in dev}}
        if len(points) <= 20:  # the whole curve, each point as it differs from the shipped one
            result["families"][family]["r@1_by_point"] = [
                {"point": {k: v for k, v in p.items() if v != SHIPPED.get(k)},
                 "r@1": {x: round(float(r1[x][:, i].mean()), 4) for x in dev},
                 "mean": round(float(np.mean([r1[x][:, i].mean() for x in dev])), 4)} for i, p in enumerate(points)]
        print(family, json.dumps(result["families"][family], indent=None)[:3000], flush=True)
    if args.mono:
        result["shipped_choice"] = both_modes(langs, args.mono, dev)
        print("both modes", json.dumps(result["shipped_choice"])[:3000], flush=True)
    if args.aside:  # once, at the value chosen on the development languages, next to the shipped setting
        _, aside = load(args.aside)
        chosen = SHIPPED | {"center": args.at, "gate": "always"}
        result["aside"] = {"at": chosen, "r@1": {}}
        for lang, data in aside.items():
            if lang == "en":
                continue
            result["aside"]["r@1"][lang] = {
                "product_shipped": round(float(np.mean(data.top == data.gold_fact)), 4),
                "replay_shipped": round(float(data.hits(SHIPPED).mean()), 4),
                "chosen": round(float(data.hits(chosen).mean()), 4),
                "r@5_shipped": round(data.recall5(SHIPPED), 4), "r@5_chosen": round(data.recall5(chosen), 4)}
        print("aside", result["aside"], flush=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
