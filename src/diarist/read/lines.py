"""Lines by meaning: each memory in the block shown by its lines closest in meaning to the question.

Trimming by rare words (``diarist.read.trim``) keeps the line that holds the question's word,
which is often the turn that asked, not the turn that answered. Here every line of a memory's
passages (a turn, or a paragraph of a long one) is embedded and ranked by its cosine to the
question, so the line kept is the one that speaks of the same thing, whatever its words.

The block's budget goes to the best memory: it is shown whole (its passages, as grouped) when its
own cosine says it is clearly about the question (``first_whole_cosine``), else by its
``first_lines`` best lines. Each memory below it is shown by its ``rest_lines`` best lines
(``context`` lines either side; after a line that asks, ``after`` lines more: the closest line is
often the question, and the answer is the turn after it), when one reaches ``min_line_cosine``,
else left out; at most ``max_rest`` of them (0: all), so a runner-up is a pointer, not a page.
With ``whole`` above 1 the memories below the first, up to that place, keep their passages too:
``POINTERS`` is the block of passages (the best memories as the budget shows them) plus a pointer
line for the next ones, which that budget would leave out. With a ``gate``, when not even the best
memory has a line that close to the question, no memory is shown whole (a question the memory
cannot answer gets a few lines, not pages). Nothing here empties a block: the first memory keeps at
least its best line (the floor and the cut decide emptiness).

The lines' vectors are written with their chunks at ingest (``Memory(store_lines=True)``, the
default; ``diarist reindex`` adds them to chunks stored before), so a question embeds only itself:
a line is looked up by the digest of its text (``line_digest``). A line the store lacks is
embedded at query time, once: a memory keeps the vectors of the lines it has embedded or read
(``LineVectors``, bounded), so a line shown again costs a lookup.
``Memory.context`` serves ``POINTERS`` by default (``settings.CONTEXT_TRIM``; "lines" or "none" on
request). The parameters are fitted on both dev sets by ``benchmarks/context_lines_cv.py``
(``diarist.settings``: LINES_*, POINTERS_*).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from .. import settings
from ..types import Hit
from .group import PASSAGE_GAP
from .trace import Trace
from .trim import TrimParams, lines_of, trim_hits

#: Cosines of lines to the question, in the order given (one call per block).
LineCosines = Callable[[Sequence[str]], Sequence[float]]


@dataclass(frozen=True)
class LinesParams:
    # The best memory is shown whole when its cosine reaches this (above 1: never; -1: always).
    first_whole_cosine: float = settings.LINES_FIRST_WHOLE_COSINE
    first_lines: int = settings.LINES_FIRST_LINES  # else: its best lines
    rest_lines: int = settings.LINES_REST_LINES  # best lines of each memory below the first
    max_rest: int = settings.LINES_MAX_REST  # memories below the first (0: all)
    min_line_cosine: float = settings.LINES_MIN_LINE_COSINE  # a line below this is not shown (but the first's best)
    context: int = settings.LINES_CONTEXT  # lines kept either side of a chosen line
    after: int = settings.LINES_AFTER  # lines kept after a chosen line besides: the reply to a line that asks
    whole: int = settings.LINES_WHOLE  # memories at the top shown by their passages (the first: as above)
    # When the best memory's closest line is under this cosine, none is shown whole (-1: off).
    gate: float = settings.LINES_GATE

    def __post_init__(self) -> None:
        for name in ("first_lines", "rest_lines", "max_rest", "context", "after", "whole"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be a whole number >= 0, got {value!r}")
        if self.first_lines < 1 or self.rest_lines < 1:
            raise ValueError("first_lines and rest_lines must be at least 1")


#: Passages and pointers: the best memories as the budget shows them, the next ones by their closest line.
POINTERS = LinesParams(first_whole_cosine=-1.0, rest_lines=1, max_rest=settings.POINTERS_MAX_REST,
                       min_line_cosine=settings.POINTERS_MIN_LINE_COSINE, context=0, after=0,
                       whole=settings.POINTERS_WHOLE, gate=settings.POINTERS_GATE)

#: The named ways to show the block's memories by their lines (Memory.context's ``trim``).
NAMED = {"lines": LinesParams(), "pointers": POINTERS}
#: Every name Memory.context's ``trim`` takes: the library's default, these, or passages whole.
TRIM_NAMES = ("auto", *NAMED, "none")
if settings.CONTEXT_TRIM not in (*NAMED, "none"):
    raise ValueError(f"settings.CONTEXT_TRIM must be one of {', '.join((*NAMED, 'none'))}, got {settings.CONTEXT_TRIM!r}")
#: What "auto" serves where the cut applies (None: passages whole).
AUTO = NAMED.get(settings.CONTEXT_TRIM)


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """The rows scaled to length 1 (float32), so that a dot product is a cosine."""
    vectors = np.asarray(vectors, dtype=np.float32)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def closest_line(hit: Hit, cosines: LineCosines) -> float:
    """The cosine of a memory's line closest in meaning to the question (-1 for a memory with no line)."""
    lines = [line for passage in (hit.passages or [hit.text]) for line in lines_of(passage)]
    return float(np.max(np.asarray(cosines(lines), dtype=np.float64))) if lines else -1.0


def gated(hits: Sequence[Hit], cosines: LineCosines, params: LinesParams) -> tuple[LinesParams, str | None]:
    """The parameters to show ``hits`` with, and why they differ from ``params``: when not even the
    best memory has a line close to the question, the block does not clearly answer it, so no
    memory is shown at length; each is shown by its closest lines, a short list of pointers."""
    if params.gate <= -1 or not hits:
        return params, None
    best = closest_line(hits[0], cosines)
    if best >= params.gate:
        return params, None
    return (replace(params, first_whole_cosine=2.0, whole=0),
            f"none shown whole: the best memory's closest line has cosine {best:.2f}, under {params.gate:g}")


def shown_whole(hit: Hit, params: LinesParams) -> bool:
    cosine = hit.scores.get("dense")
    return params.first_whole_cosine <= -1 or (cosine is not None and cosine >= params.first_whole_cosine)


#: The vectors a store holds for some lines, by line (lines it lacks left out).
StoredLines = Callable[[Sequence[str]], dict[str, np.ndarray]]


def line_digest(line: str) -> bytes:
    """What a store finds a line's vector by: 16 bytes of BLAKE2b of its text."""
    return hashlib.blake2b(line.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class LineVectors:
    """Unit vectors of the lines one embedder has embedded or a store gave, the least recently
    used dropped past ``capacity``: an agent asks many questions of the same memories, and their
    lines recur."""

    def __init__(self, embed: Callable[[list[str]], np.ndarray], capacity: int = settings.LINES_CACHE_LINES):
        if capacity < 0:
            raise ValueError(f"capacity must be >= 0, got {capacity!r}")
        self._embed, self.capacity = embed, capacity
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()  # the server answers from threads
        self.embedded = 0  # lines embedded so far (the rest were found here or in a store)
        self.read = 0  # lines read from a store so far

    def __len__(self) -> int:
        return len(self._vectors)

    def __call__(self, lines: Sequence[str], stored: StoredLines | None = None) -> np.ndarray:
        """The lines' vectors, one row each: kept here, else from ``stored``, else embedded."""
        with self._lock:
            found = {line: self._vectors[line] for line in dict.fromkeys(lines) if line in self._vectors}
            for line in found:
                self._vectors.move_to_end(line)
        missing = [line for line in dict.fromkeys(lines) if line not in found]
        fetched = stored(missing) if missing and stored is not None else {}
        embedded = [line for line in missing if line not in fetched]
        new = dict(fetched)
        if embedded:
            new.update(zip(embedded, unit_rows(self._embed(embedded))))
        found.update(new)
        with self._lock:
            self.embedded += len(embedded)
            self.read += len(fetched)
            for line in missing:
                self._vectors[line] = new[line]
                self._vectors.move_to_end(line)
            while len(self._vectors) > self.capacity:
                self._vectors.popitem(last=False)
        return np.stack([found[line] for line in lines]) if lines else np.zeros((0, 0), np.float32)


def _after(line: str, params: LinesParams) -> int:
    """Lines kept after a chosen line: its reply, when the line asks."""
    return params.after if line.rstrip().endswith("?") else 0


def _runs(lines: list[list[str]], keep: set[tuple[int, int]], score: dict[tuple[int, int], float]) -> tuple[list[str], list[float]]:
    """Kept lines merged into runs of consecutive lines of one passage, each with its best line's cosine."""
    runs, best = [], []
    for p, passage in enumerate(lines):
        i = 0
        while i < len(passage):
            if (p, i) not in keep:
                i += 1
                continue
            j = i
            while j < len(passage) and (p, j) in keep:
                j += 1
            runs.append("\n".join(passage[i:j]))
            best.append(max(score.get((p, n), -2.0) for n in range(i, j)))
            i = j
    return runs, best


def by_meaning(hits: Sequence[Hit], cosines: LineCosines,
               params: LinesParams = LinesParams()) -> list[tuple[Hit, bool] | None]:
    """Per memory (best first): as the block may show it and whether it was trimmed, or None when
    it is left out (below the first: past ``max_rest``, or no line close enough)."""
    considered = [place for place in range(len(hits)) if not params.max_rest or place <= params.max_rest]
    trimmed = [place for place in considered
               if not (place == 0 and shown_whole(hits[0], params)) and not 0 < place < params.whole]
    lines = {place: [lines_of(p) for p in (hits[place].passages or [hits[place].text])] for place in trimmed}
    flat = [(place, p, n) for place in trimmed for p, passage in enumerate(lines[place]) for n in range(len(passage))]
    scores = np.asarray(cosines([lines[place][p][n] for place, p, n in flat]), dtype=np.float64) if flat else np.zeros(0)
    per_memory: dict[int, dict[tuple[int, int], float]] = {place: {} for place in trimmed}
    for (place, p, n), score in zip(flat, scores):
        per_memory[place][(p, n)] = float(score)
    out: list[tuple[Hit, bool] | None] = []
    for place, hit in enumerate(hits):
        if place not in considered:
            out.append(None)
            continue
        if place not in per_memory:
            out.append((hit, False))
            continue
        score = per_memory[place]
        ranked = sorted(score, key=lambda key: (-score[key], key))
        wanted = params.first_lines if place == 0 else params.rest_lines
        picked = [key for key in ranked[:wanted] if score[key] >= params.min_line_cosine]
        if not picked:
            if place or not ranked:
                out.append(None if place else (hit, False))
                continue
            picked = ranked[:1]
        keep = {(p, m) for p, n in picked
                for m in range(max(0, n - params.context),
                               min(len(lines[place][p]), n + params.context + _after(lines[place][p][n], params) + 1))}
        runs, best = _runs(lines[place], keep, score)
        texts = hit.passages or [hit.text]
        if runs == texts:
            out.append((hit, False))
            continue
        order = sorted(range(len(runs)), key=lambda r: -best[r])
        out.append((replace(hit, text=PASSAGE_GAP.join(runs), passages=runs, passage_ranks=order), True))
    return out


def why_left_out(place: int, params: LinesParams) -> str:
    if params.max_rest and place > params.max_rest:
        return f"below the {params.max_rest} memories the block shows after the best"
    return f"no line within cosine {params.min_line_cosine:g} of the question"


# -- the trim stage ------------------------------------------------------------------------------


def trim_block(hits: Sequence[Hit], trim: TrimParams | LinesParams | None, terms: Sequence[str],
               line_cosines: LineCosines | None, trace: Trace, keep: Sequence[int] = (),
               pointers: Sequence[int] = ()) -> tuple[list[Hit], dict[int, Hit]]:
    """The trim stage: the memories as the block shows them (by their lines closest in meaning,
    a ``LinesParams``, or holding the question's ``terms``, a ``TrimParams``), those it leaves
    out dropped, and for each one shown by some of its lines (by ``id``) the ranked memory it
    comes from. Records "trim"; nothing to trim (no hits, or ``trim`` None): as they are, no record.
    ``keep``: the places of the memories best by meaning, never left out while another stays (each
    shown by its closest line, or its best passage); ``pointers``: places shown that way only (kept
    by that rule alone, not by the cut's own signals)."""
    hits = list(hits)
    if trim is None or not hits:
        return hits, {}
    if isinstance(trim, LinesParams):
        if line_cosines is None:
            raise ValueError("trimming by meaning (LinesParams) needs line_cosines")
        params, why = gated(hits, line_cosines, trim)
        shown_as = by_meaning(hits, line_cosines, params)
        why_out = lambda place: why_left_out(place, params)  # noqa: E731
        shown_by = "lines closest in meaning" + (f"; {why}" if why else "")
    else:
        shown_as = trim_hits(hits, terms, trim)
        why_out = lambda place: "no line holds a selective term of the question, and a better memory does"  # noqa: E731
        shown_by = "matching lines"
    for place in pointers:
        if shown_as[place] is not None:
            shown_as[place] = closest_only(hits[place], line_cosines)
    if any(shown_as):
        for place in keep:
            if shown_as[place] is None:
                shown_as[place] = closest_only(hits[place], line_cosines)
    for place, (hit, kept) in enumerate(zip(hits, shown_as)):
        if kept is None:
            trace.drop(hit.id or f"chunk {hit.chunk_id}", "trim", why_out(place), hit.score)
    pairs = [kept for kept in shown_as if kept is not None]
    n = sum(t for _, t in pairs)
    trace.record("trim", len(pairs), len(hits) - len(pairs),
                 f"{n} memory cut to its {shown_by}" if n == 1 else f"{n} memories cut to their {shown_by}")
    ranked = {id(kept[0]): hit for hit, kept in zip(hits, shown_as) if kept is not None and kept[1]}
    return [hit for hit, _ in pairs], ranked


def closest_only(hit: Hit, line_cosines: LineCosines | None) -> tuple[Hit, bool]:
    """A memory by its one closest line (without line cosines: its best passage)."""
    if line_cosines is not None:
        shown = by_meaning([hit], line_cosines, LinesParams(first_whole_cosine=2.0, first_lines=1, min_line_cosine=-1.0,
                                                            context=0, after=0, whole=0, gate=-1.0))[0]
        if shown is not None:
            return shown
    texts = hit.passages or [hit.text]
    if len(texts) == 1:
        return hit, False
    best = (hit.passage_ranks or [0])[0]
    return replace(hit, text=texts[best], passages=[texts[best]], passage_ranks=[0]), True
