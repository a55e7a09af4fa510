"""The lexical channel: text analysis, Okapi BM25 and the posting-block codec, shared by every
store so that every backend ranks identically.

- ``analyze``: text -> index terms (NFKC, case-folded, stopwords out, stemmed); ``analyze_question``:
  a question's, less the words that carry no evidence in a question (fillers, scaffolding).
- ``bm25``: the scoring math as small pure functions, and the search over a store's blocks.
- ``postings``: the block codec and block upkeep on write and delete.
"""

from .analyze import QUESTION_STOPWORDS, STOPWORDS, VERSION, analyze, analyze_question, stem
from .bm25 import B, K1, LexicalChannel, idf, term_scores
from .state import status_reason

__all__ = ["analyze", "analyze_question", "stem", "QUESTION_STOPWORDS", "STOPWORDS", "VERSION", "K1", "B", "idf", "term_scores", "LexicalChannel", "status_reason"]
