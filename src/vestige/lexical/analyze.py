"""Text analysis for the lexical channel: the same terms at index time and at query time."""

from __future__ import annotations

import re
import unicodedata

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)

# A short English stopword list: these words carry no evidence and have the longest postings.
STOPWORDS = frozenset(
    """a an and are as at be been but by can could did do does doing for from had has have
    he her hers him his how i if in into is it its itself me my of on or our ours she should
    so than that the their theirs them then there these they this those to too us was we were
    what when where which who whom why will with would you your yours""".split()
)

#: Version of the analyzer and postings format; an index written by another version is not used.
#: 1: posting blocks of 1,024 chunk ids; 2: of 8,192 (the stores' migrations repack 1 into 2).
VERSION = 2


def analyze(text: str, *, keep_stopwords: bool = False) -> list[str]:
    """Text -> index terms: NFKC-normalised, case-folded runs of letters and digits."""
    text = unicodedata.normalize("NFKC", text).casefold()
    terms = _TOKEN.findall(text)
    if keep_stopwords:
        return terms
    return [t for t in terms if t not in STOPWORDS]
