"""The lexical channel's text analysis and Okapi BM25 scoring, as small pure functions.

BM25 (Robertson & Zaragoza, "The Probabilistic Relevance Framework: BM25 and Beyond", 2009),
with the non-negative idf of Lucene (also bm25s' default "lucene" method):

    idf(t)      = ln(1 + (N - df + 0.5) / (df + 0.5))
    score(t, d) = idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl))
"""

from __future__ import annotations

import re
import unicodedata

import numpy as np

K1 = 1.5
B = 0.75

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)

# A short English stopword list: these words carry no evidence and have the longest postings.
STOPWORDS = frozenset(
    """a an and are as at be been but by can could did do does doing for from had has have
    he her hers him his how i if in into is it its itself me my of on or our ours she should
    so than that the their theirs them then there these they this those to too us was we were
    what when where which who whom why will with would you your yours""".split()
)


def analyze(text: str, *, keep_stopwords: bool = False) -> list[str]:
    """Text -> index terms: NFKC-normalised, case-folded runs of letters and digits."""
    text = unicodedata.normalize("NFKC", text).casefold()
    terms = _TOKEN.findall(text)
    if keep_stopwords:
        return terms
    return [t for t in terms if t not in STOPWORDS]


def idf(n_docs: int, df: np.ndarray | int) -> np.ndarray:
    """Lucene's non-negative BM25 idf."""
    df = np.asarray(df, dtype=np.float64)
    return np.log1p((n_docs - df + 0.5) / (df + 0.5))


def term_scores(
    tf: np.ndarray, doc_len: np.ndarray, avgdl: float, term_idf: float, k1: float = K1, b: float = B
) -> np.ndarray:
    """BM25 contribution of one term to each document that contains it."""
    tf = tf.astype(np.float64)
    norm = k1 * (1.0 - b + b * doc_len.astype(np.float64) / max(avgdl, 1e-9))
    return term_idf * tf * (k1 + 1.0) / (tf + norm)

#: Version of the analyzer and postings format; an index written by another version is not used.
VERSION = 1
