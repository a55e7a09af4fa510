"""The lexical channel's share of the convex fusion, per question language and embedding model.

The default model (all-MiniLM-L6-v2) was trained on English: on a question in another language
its cosine separates paragraphs less well, and the per-language BM25 channel deserves more of
the fused score than the 0.25 (``1 - settings.FUSION_DENSE_WEIGHT``) fitted on English sets.
``LEXICAL_WEIGHT`` gives that share per question language (``lexical.detect``; ``"*"``: any other
language but English), applied by ``diarist.read.fusion.question_dense_weight``. An English
question, a model not listed, or a dense weight the caller chose (any but the default) is left
exactly as it was.

Fitted on XQuAD's development languages (de, es, ru, zh, ar, hi), same-language, leave one
language out: each language's value is the one that maximises mean R@1 over the other five, so
every listed value is out of sample for its own language; ``"*"`` is the value chosen on all six.
``benchmarks/xquad_weight_cv.py`` (results in ``benchmarks/results/xquad/weight/``).
"""

from __future__ import annotations

from .language import ENGLISH

#: Embedding model id prefix -> question language -> the lexical channel's share (1 - dense weight).
LEXICAL_WEIGHT: dict[str, dict[str, float]] = {
    # Every fold chose 0.45 (grid 0.2-0.6): one share for every language but English. Same-language
    # R@1 out of sample, default 0.25 -> 0.45: de 0.893 -> 0.901, es 0.919 -> 0.919, ru 0.889 -> 0.898,
    # zh 0.908 -> 0.918, ar 0.868 -> 0.884, hi 0.898 -> 0.911.
    "all-MiniLM-L6-v2": {"de": 0.45, "es": 0.45, "ru": 0.45, "zh": 0.45, "ar": 0.45, "hi": 0.45, "*": 0.45},
}


def lexical_weight(model_id: str, language: str) -> float | None:
    """The lexical share for questions in ``language`` under this model, or None (the default)."""
    if language == ENGLISH:
        return None
    table = next((t for start, t in LEXICAL_WEIGHT.items() if model_id.startswith(start)), None)
    if not table:
        return None
    return table.get(language, table.get("*"))
