"""Which language a passage is in, for the lexical channel: the script decides where it can
(Chinese, Japanese, Korean, Thai, Cyrillic, Arabic, Devanagari, Greek...), and a language
identifier that ships its model in its wheel (py3langid: naive Bayes over byte n-grams, 4.6 MB,
BSD) decides among the languages of one script. Nothing is downloaded at run time.

English is the default: a Latin-script passage is another language only when the identifier is
sure of it (``LATIN_CONFIDENCE``) and the passage is long enough to tell (``LATIN_MIN_LETTERS``),
so short English turns ("Haha yes!", "ok") stay English and are analysed as they always were.
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache

from .stopwords import ENGLISH_STOPWORDS

ENGLISH = "en"

#: A Latin-script passage is another language than English only above this probability (the
#: identifier's, normalised over the Latin-script languages we analyse) ...
LATIN_CONFIDENCE = 0.9
#: ... and with at least this many letters: under it the identifier guesses.
LATIN_MIN_LETTERS = 12
#: Latin-script text of at least ENGLISH_MIN_WORDS words, at least ENGLISH_FUNCTION_SHARE of them
#: English stopwords ("the", "and", "of"...), is English without asking the identifier: English
#: prose is about half such words, other languages' a few percent, and the identifier costs about
#: 1 ms a paragraph (its walk over the bytes is Python), a third of an ingest's CPU on English.
ENGLISH_MIN_WORDS = 20
ENGLISH_FUNCTION_SHARE = 0.3
#: The identifier reads at most this many characters of a passage (its cost grows with length).
IDENTIFIER_CHARS = 1000

#: Scripts written without spaces between words: analysed as character bigrams.
UNSPACED = ("zh", "ja", "th")

# Letters of each script, as character classes (counted to find the passage's main script).
_SCRIPTS: dict[str, re.Pattern[str]] = {
    "han": re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]"),
    "kana": re.compile(r"[\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f]"),
    "hangul": re.compile(r"[\u1100-\u11ff\u3130-\u318f\uac00-\ud7af]"),
    "thai": re.compile(r"[\u0e00-\u0e7f]"),
    "cyrillic": re.compile(r"[\u0400-\u04ff]"),
    "arabic": re.compile(r"[\u0600-\u06ff\u0750-\u077f\ufb50-\ufdff\ufe70-\ufeff]"),
    "devanagari": re.compile(r"[\u0900-\u097f]"),
    "greek": re.compile(r"[\u0370-\u03ff]"),
    "hebrew": re.compile(r"[\u0590-\u05ff]"),
    "armenian": re.compile(r"[\u0530-\u058f]"),
    "tamil": re.compile(r"[\u0b80-\u0bff]"),
    "latin": re.compile(r"[A-Za-z\u00c0-\u024f]"),
}
#: The languages the identifier chooses among, per script (a script of one language needs none).
_CANDIDATES: dict[str, tuple[str, ...]] = {
    "latin": ("en", "de", "es", "fr", "it", "pt", "nl", "sv", "da", "no", "fi", "pl", "cs", "ro", "hu",
              "tr", "id", "ca", "eu", "et", "lt", "ga", "eo"),
    "cyrillic": ("ru", "uk", "bg", "sr", "mk", "be", "kk"),
    "arabic": ("ar", "fa", "ur"),
    "devanagari": ("hi", "ne", "mr"),
}
_SINGLE: dict[str, str] = {"han": "zh", "hangul": "ko", "thai": "th", "greek": "el", "hebrew": "he",
                           "armenian": "hy", "tamil": "ta"}

_ASCII_NON_LETTERS = re.compile(r"[^A-Za-z]+")
_LATIN_WORD = re.compile(r"[a-z\u00c0-\u024f]+")

_local = threading.local()  # an identifier per thread: set_languages changes it in place


def _identifier(script: str):
    """The identifier restricted to one script's languages (loaded once per thread: 0.5 s)."""
    found = getattr(_local, "identifiers", None)
    if found is None:
        found = _local.identifiers = {}
    if script not in found:
        from py3langid.langid import MODEL_FILE, LanguageIdentifier

        ident = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
        ident.set_languages(list(_CANDIDATES[script]))
        found[script] = ident
    return found[script]


def main_script(text: str) -> tuple[str | None, int]:
    """The script most of the passage's letters are in, and how many letters that is (None: no
    letters). Kana anywhere makes CJK text Japanese (Japanese mixes kanji and kana)."""
    if text.isascii():
        letters = len(_ASCII_NON_LETTERS.sub("", text))
        return ("latin", letters) if letters else (None, 0)
    counts = {name: len(pattern.findall(text)) for name, pattern in _SCRIPTS.items()}
    if counts["kana"]:
        counts["kana"] += counts.pop("han")
    best = max(counts, key=counts.__getitem__)
    return (best, counts[best]) if counts[best] else (None, 0)


def _reads_as_english(text: str) -> bool:
    """Long enough, and English's function words make up enough of it."""
    words = _LATIN_WORD.findall(text[:IDENTIFIER_CHARS].casefold())
    return len(words) >= ENGLISH_MIN_WORDS and sum(w in ENGLISH_STOPWORDS for w in words) >= ENGLISH_FUNCTION_SHARE * len(words)


@lru_cache(maxsize=4096)  # a search analyses its hits' texts again (floor, block, second stage)
def detect(text: str) -> str:
    """The passage's language as an ISO 639-1 code; English when it cannot tell."""
    script, letters = main_script(text)
    if script is None:
        return ENGLISH
    if script == "kana":
        return "ja"
    if script in _SINGLE:
        return _SINGLE[script]
    if script == "latin" and (letters < LATIN_MIN_LETTERS or _reads_as_english(text)):
        return ENGLISH
    language, probability = _identifier(script).classify(text[:IDENTIFIER_CHARS])
    if script == "latin" and probability < LATIN_CONFIDENCE:
        return ENGLISH
    return language
