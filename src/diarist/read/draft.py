"""The context read's first stage, as ``Memory.context`` builds it: the block's ``Draft`` with the
question's line cosines (the lines-by-meaning trim) and the marks' line vectors (stored lines
first, then the memory's ``LineVectors``, kept across questions)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..embed import Embedder
from .budget import BlockOptions, Draft
from .lines import LineVectors, StoredLines, unit_rows


def line_cosines(embedder: Embedder, vectors: LineVectors, query: str, vector: np.ndarray | None = None,
                 stored: StoredLines | None = None) -> Callable[[Sequence[str]], np.ndarray]:
    """Cosines of lines to ``query`` by ``embedder`` (the lines-by-meaning trim):
    against ``vector``, the search's own vector of it, else one embedded on first use (an
    empty block needs no line). The lines' vectors are read from ``stored`` (an app's stored
    chunks) where they are there (None: every line is embedded)."""
    question = [] if vector is None else [unit_rows(vector[None, :])[0]]

    def cosines(lines: Sequence[str]) -> np.ndarray:
        if not lines:
            return np.zeros(0)
        if not question:
            question.append(unit_rows(embedder.embed_query([query]))[0])
        return vectors(list(lines), stored) @ question[0]
    return cosines


def context_draft(options: BlockOptions, embedder: Embedder, vectors: LineVectors, stored: StoredLines,
                  query: str) -> Draft:
    """The draft of ``query``'s block: its lines' cosines from the search's vector of the question;
    marks by meaning where the block has a cut (the calibrated model), stored lines first."""
    marks_vectors = (lambda lines: vectors(lines, stored)) if options.cut is not None else None
    return Draft(options, lines_of_vector=lambda vector: line_cosines(embedder, vectors, query, vector, stored),
                 line_vectors=marks_vectors)
