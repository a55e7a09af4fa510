"""The lexical channel: text analysis, Okapi BM25 and the posting-block codec, shared by every
store so that every backend ranks identically.

- ``analyze``: text -> index terms (NFKC, case-folded, stopwords out, stemmed, in the text's
  language); ``analyze_question``: a question's, less the words that carry no evidence in a
  question (fillers, scaffolding).
- ``language``: which language a passage is in (``detect``).
- ``bm25``: the scoring math as small pure functions, and the search over a store's blocks.
- ``postings``: the block codec and block upkeep on write and delete.
"""

from .analyze import QUESTION_STOPWORDS, STOPWORDS, VERSION, analyze, analyze_passage, analyze_question, stem
from .language import detect
from .bm25 import B, K1, LexicalChannel, idf, term_scores
from .state import status_reason

__all__ = ["analyze", "analyze_passage", "analyze_question", "detect", "stem", "QUESTION_STOPWORDS", "STOPWORDS", "VERSION", "K1", "B", "idf", "term_scores", "LexicalChannel", "status_reason"]
