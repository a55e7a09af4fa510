"""The context block, as it was imported before the read path's stages held it (kept for one
release): the block is ``diarist.read.block``, its budget ``diarist.read.budget``, its cut and
trim ``diarist.read.cut`` and ``diarist.read.trim``, placing it in a chat ``diarist.chat``.

``build_context`` runs the block's stages over hits already ranked (the lab replays recorded
searches through it); ``Memory.context`` searches and runs the same stages in the read path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .chat import check_chat, place_context, question_of
from .read.block import FOOTER, HEADER, ORDERS, ContextBlock, Snippet, format_date, format_marks, format_snippet, format_source
from .read.budget import MAX_BUDGET_TOKENS, BlockOptions, Draft, check_options, fill_budget, finish, score_cut
from .read.lines import LineCosines, LinesParams, trim_block
from .read.trace import Trace
from .read.trim import TrimParams
from .settings import CONTEXT_BUDGET_TOKENS, TRIM
from .types import Hit

__all__ = ["DEFAULT_TRIM", "FOOTER", "HEADER", "MAX_BUDGET_TOKENS", "ORDERS", "ContextBlock", "Snippet", "build_context",
           "check_chat", "check_options", "format_date", "format_marks", "format_snippet", "format_source",
           "place_context", "question_of"]

#: The block's trimming by default here (diarist.read.trim; settings TRIM_*).
DEFAULT_TRIM = TrimParams() if TRIM else None


def build_context(
    hits: Sequence[Hit],
    count_tokens: Callable[[str], int],
    *,
    budget_tokens: int = CONTEXT_BUDGET_TOKENS,
    min_score: float | None = None,
    order: str = "date",
    notes: Sequence[str] = (),
    relative_cut: float | None = None,
    terms: Sequence[str] = (),
    trace: Trace | None = None,
    trim: TrimParams | LinesParams | None = DEFAULT_TRIM,
    line_cosines: LineCosines | None = None,
) -> ContextBlock:
    """The block of ``hits`` (best first, already cut): the score cuts (``min_score``,
    ``relative_cut``), the trim (``trim``, by the question's ``terms`` or ``line_cosines``) and
    the budget, then the layout, as ``Memory.context`` runs them (see ``diarist.read.budget``).
    ``notes`` (from the search) open the block's notes; ``trace`` gets the stages' records."""
    budget = check_options(budget_tokens, order)
    trace = trace if trace is not None else Trace()
    draft = Draft(BlockOptions(count_tokens, budget, order, min_score, relative_cut, None, trim, line_cosines),
                  terms=list(terms))
    shown, ranked = trim_block(score_cut(hits, draft, trace), trim, draft.terms, line_cosines, trace)
    draft.trimmed, draft.shown_as = set(ranked), ranked
    fill_budget(shown, draft, trace)
    return finish(draft, trace, notes)
