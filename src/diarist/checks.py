"""``Memory``'s argument checks, in one place: each turns a bad option or argument into a
ConfigError (an option of the memory) or InvalidInput (an argument of one call) that names it,
before it reaches numpy, SQLite or a store as a type error in the middle of a search or a write."""

from __future__ import annotations

import math
import numbers
import os
import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from . import settings
from .embed import Embedder
from .embed.cache import EmbeddingCache
from .errors import ConfigError, InvalidInput, NotFound, StoreError, UnknownApp
from .files import not_regular
from .read.cut import CutParams
from .read.floor import Floor
from .read.lines import AUTO as AUTO_TRIM
from .read.lines import NAMED as NAMED_LINES
from .read.lines import TRIM_NAMES, LinesParams
from .read.search import SearchSettings, check_dense_weight, check_fusion, stage_named
from .read.trim import TrimParams
from .rerank import Reranker, get_reranker
from .store.base import KINDS, Item, Store
from .write.validate import MAX_QUERY_CHARS, check_date, check_metadata, check_text, shown

MAX_SEARCH_K = 10_000  # hits one search may ask for
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def open_cache(cache: "str | os.PathLike[str] | EmbeddingCache | None") -> "EmbeddingCache | None":
    """The embedding cache a path names (opened here), or the cache object given, or None.
    A bad path is a StoreError: a folder, a FIFO or a NUL in it raised sqlite3 or ValueError."""
    if cache is None or isinstance(cache, EmbeddingCache):
        return cache
    if not isinstance(cache, (str, os.PathLike)):
        raise ConfigError(f"embed_cache must be a path or an EmbeddingCache, not {type(cache).__name__}")
    try:
        if (what := not_regular(cache)) is not None:
            raise StoreError(f"the embedding cache {shown(os.fspath(cache))} is {what}, not a file")
        return EmbeddingCache(cache)
    except (sqlite3.Error, OSError, ValueError, UnicodeError, RuntimeError) as exc:
        raise StoreError(f"cannot open the embedding cache {shown(os.fspath(cache))}: {exc}") from None
def check_group(group: object) -> bool:
    if not isinstance(group, bool):
        raise ConfigError(f"group must be True or False, got {shown(group)}")
    return group


def check_search_numbers(values: dict[str, Any]) -> None:
    """ConfigError for a search option of the wrong type or range (``Memory(...)``, ``derive``),
    before it reaches numpy as a type error in the middle of a search."""
    for name, value in values.items():
        if name == "lexical":
            if not isinstance(value, bool):
                raise ConfigError(f"lexical_fusion must be True or False, not {type(value).__name__}")
        elif name in ("depth", "rrf_k", "rerank_depth"):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 0 <= value <= 1_000_000:
                raise ConfigError(f"{name} must be a whole number from 0 to 1000000, not {describe(value)}")
        elif name in ("k1", "b"):
            top = 100.0 if name == "k1" else 1.0
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0.0 <= value <= top:
                raise ConfigError(f"{name} must be a number from 0 to {top:g}, not {describe(value)}")


def describe(value: Any) -> str:
    """A short description of a bad value (a 5000-digit int cannot even be printed)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return "a number out of range" if isinstance(value, int) and value.bit_length() > 64 else repr(value)
    return type(value).__name__


def check_backup_path(dest: Any) -> str:
    """The backup's path as text, or InvalidInput (not a TypeError, ValueError or OSError from deep in SQLite)."""
    try:
        path = os.fspath(dest)
    except TypeError:
        raise InvalidInput(f"a backup path must be a path, not {type(dest).__name__}") from None
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if "\x00" in path:
        raise InvalidInput("a backup path may not contain a NUL character")
    try:
        path.encode("utf-8")  # SQLite opens files by their UTF-8 name
    except UnicodeError:
        raise InvalidInput(f"the backup path {path!r} is not valid text (UTF-8)") from None
    if any(len(os.fsencode(part)) > 255 for part in path.split(os.sep)):
        raise InvalidInput("a backup path's file name is over 255 bytes")
    return path



def kinds_of(kind: str | None) -> tuple[str, ...]:
    """The item kinds ``kind`` names (None: every kind), or InvalidInput."""
    if kind is None:
        return KINDS
    if kind not in KINDS:
        raise InvalidInput(f"unknown kind {shown(kind)}; use one of {', '.join(KINDS)}")
    return (kind,)


def find_item(store: Store, app: str, kind: str | None, item_id: str) -> Item:
    """The stored item ``item_id`` of the kinds ``kind`` names (None: either), or NotFound."""
    for each in kinds_of(kind):
        found = store.get_item(app, each, item_id)
        if found is not None:
            return found
    raise NotFound(f"no {kind or 'session or fact'} {item_id!r} in app {app!r}")


def require_app(store: Store, app: str) -> None:
    """UnknownApp unless the store holds something of ``app``."""
    if store.app_version(app) is None:
        raise UnknownApp(f"app {app!r} holds no memory in {store.location}")


def check_page(kind: Any, limit: Any, offset: Any, newest_first: Any) -> str:
    """``Memory.list``'s kind (one kind) and paging (a limit >= 1, an offset >= 0, newest_first a
    bool) checked; returns the kind."""
    if not isinstance(kind, str):  # one kind: None (every kind) does not page
        raise InvalidInput(f"kind must be one of {', '.join(KINDS)}, got {shown(kind)}")
    (kind,) = kinds_of(kind)
    for name, value in (("limit", limit), ("offset", offset)):
        if not isinstance(value, int) or isinstance(value, bool) or not (1 if name == "limit" else 0) <= value < 2**62:
            raise InvalidInput(f"{name} must be an integer >= {1 if name == 'limit' else 0}, got {shown(value)}")
    if not isinstance(newest_first, bool):
        raise InvalidInput(f"newest_first must be True or False, got {shown(newest_first)}")
    return kind


def check_list_filters(where: Any, since: Any, until: Any) -> tuple[dict[str, Any] | None, str | None, str | None]:
    """``Memory.list``'s filters checked: ``where`` as search's (None or a non-empty object of
    metadata keys and values), ``since``/``until`` None or a day (YYYY-MM-DD)."""
    if where is not None:
        if not isinstance(where, dict) or not where:
            raise InvalidInput(f"where must be a non-empty object of metadata keys and values, got {shown(where)}")
        where = check_metadata(where, "where")
    for name, day in (("since", since), ("until", until)):
        if day is not None and not (isinstance(day, str) and _DAY.fullmatch(day)):
            raise InvalidInput(f"{name} must be a day YYYY-MM-DD or None, got {shown(day)}")
    return where, since, until


def floor_option(embedder: Embedder, floor: float | str | Floor | None) -> Floor | None:
    """"auto": the embedder's evidence floor, else its cosine floor; "cosine": its cosine
    floor alone (the floor before it read the question and the lexical index); a number: a
    cosine-only floor there; a Floor as given; None: no floor."""
    if floor == "auto" or floor == "cosine":
        evidence = embedder.calibration.evidence_floor
        if floor == "auto" and evidence is not None:
            return evidence
        cosine = embedder.calibration.relevance_floor
        return None if cosine is None else Floor(float(cosine))
    if floor is None or isinstance(floor, Floor):
        return floor
    if isinstance(floor, bool) or not isinstance(floor, numbers.Real):
        raise ConfigError(f"floor must be a cosine, a Floor, None, 'auto' or 'cosine', got {describe(floor)}")
    if not -1.0 <= floor <= 1.0:  # a cosine; also keeps a huge int from overflowing float()
        raise ConfigError(f"floor must be a cosine from -1 to 1, got {describe(floor)}")
    return Floor(float(floor))


def cut_option(embedder: Embedder, cut: str | CutParams | None) -> CutParams | None:
    """"auto": the cut of ``diarist.settings`` for the model its values were chosen for (its
    ``Calibration.block_cut``; other models' cosines are on other scales: no cut); CutParams as
    given; None: no cut."""
    if cut == "auto":
        return CutParams() if embedder.calibration.block_cut else None
    if cut is None or isinstance(cut, CutParams):
        return cut
    raise ConfigError(f"cut must be 'auto', a CutParams or None, got {shown(cut)}")


def check_search_call(query: Any, k: Any, previous: Any, rerank: Any, explain: Any, now: Any,
                      where: Any) -> tuple[str, str | None, str | None, dict[str, Any] | None]:
    """``Memory.search``'s arguments checked: (query, previous, now as ISO text or None, where)."""
    if isinstance(query, str) and not query.strip():
        raise InvalidInput("the query is empty")
    query = check_text(query, "the query", max_chars=MAX_QUERY_CHARS)
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_SEARCH_K:
        raise InvalidInput(f"k must be a positive integer up to {MAX_SEARCH_K:,}, got {shown(k)}")
    if isinstance(previous, str) and not previous.strip():
        previous = None  # an empty previous turn is no previous turn
    elif previous is not None:
        previous = check_text(previous, "previous", max_chars=MAX_QUERY_CHARS)
    if not isinstance(rerank, bool):
        raise InvalidInput(f"rerank must be True or False, got {shown(rerank)}")
    if not isinstance(explain, bool):
        raise InvalidInput(f"explain must be True or False, got {shown(explain)}")
    when = check_date(now, "now")
    where, _, _ = check_list_filters(where, None, None)
    return query, previous, when, where


def search_extras(explain: bool, after: Any) -> dict[str, Any]:
    """``run_search``'s extra arguments: explain, and the read stages ``after`` names (checked)."""
    extra: dict[str, Any] = {"explain": True} if explain else {}  # the lab's scripts wrap the bare call
    if after:
        if isinstance(after, str) or not isinstance(after, Sequence):
            raise InvalidInput(f"after must be a list of read stages (names or callables), got {shown(after)}")
        try:
            extra["after"] = [stage_named(stage) for stage in after]
        except ConfigError as exc:
            raise InvalidInput(str(exc)) from None
    return extra


def check_context_call(trim: Any, relative_cut: Any, min_score: Any,
                       cut: CutParams | None) -> TrimParams | LinesParams | None:
    """``Memory.context``'s trim (a name resolved: "auto" is the pointers where the memory has
    a ``cut``), relative_cut and min_score checked; returns the trim."""
    if isinstance(trim, str):
        if trim not in TRIM_NAMES:
            raise InvalidInput(f"trim must be 'auto', 'lines', 'pointers', 'none', None, TrimParams or "
                               f"LinesParams, got {shown(trim)}")
        if trim in NAMED_LINES:
            trim = NAMED_LINES[trim]
        elif trim == "none":
            trim = None
        else:
            trim = AUTO_TRIM if cut is not None else None  # fitted together, for one model
    elif trim is not None and not isinstance(trim, (TrimParams, LinesParams)):
        raise InvalidInput(f"trim must be 'auto', 'lines', 'pointers', 'none', None, TrimParams or "
                           f"LinesParams, got {shown(trim)}")
    if relative_cut is not None and (
        isinstance(relative_cut, bool) or not isinstance(relative_cut, (int, float))
        or not 0.0 <= relative_cut <= 1.0
    ):
        raise InvalidInput(f"relative_cut must be a number from 0 to 1 or None, got {shown(relative_cut)}")
    if min_score is not None and (
        isinstance(min_score, bool) or not isinstance(min_score, (int, float))
        or (isinstance(min_score, float) and not math.isfinite(min_score)) or abs(min_score) > 2.0**1023
    ):  # an int beyond a float's range (10**5000) is not a score either
        raise InvalidInput(f"min_score must be a finite number or None, got {shown(min_score)}")
    return trim


@dataclass(frozen=True)
class Options:
    """A memory's search options, as ``Memory(...)`` takes them. ``checked_options`` checks them
    once and resolves the names into what they name (the floor, the cut, the second stage), so
    that ``Memory.derive`` is a ``dataclasses.replace`` of a checked record, checked again."""

    depth: int = settings.DEPTH
    fusion: str = settings.FUSION
    dense_weight: float = settings.FUSION_DENSE_WEIGHT
    rrf_k: int = settings.FUSION_RRF_K
    k1: float = settings.BM25_K1
    b: float = settings.BM25_B
    lexical_fusion: bool = True
    rerank_depth: int = settings.RERANK_DEPTH
    group: bool = settings.GROUP_BY_MEMORY
    floor: float | str | Floor | None = settings.FLOOR
    cut: str | CutParams | None = settings.CUT
    reranker: Reranker | str | None = settings.RERANKER

    def search_settings(self, fetch_whole_pool: bool) -> SearchSettings:
        """The read path's settings of checked options (``fetch_whole_pool``: the plan's, see SearchSettings)."""
        if not (self.floor is None or isinstance(self.floor, Floor)):
            raise ValueError("search settings are made of checked options (checked_options)")
        return SearchSettings(depth=self.depth, fusion=self.fusion, dense_weight=self.dense_weight, rrf_k=self.rrf_k,
                              k1=self.k1, b=self.b, lexical=self.lexical_fusion, rerank_depth=self.rerank_depth,
                              floor=self.floor, fetch_whole_pool=fetch_whole_pool, group=self.group)


def checked_options(options: Options, embedder: Embedder) -> Options:
    """``options`` checked (ConfigError names a bad one), its names resolved for ``embedder``; a
    value already resolved (a Floor, a CutParams, a Reranker) is kept as it is."""
    check_search_numbers({"depth": options.depth, "rrf_k": options.rrf_k, "k1": options.k1, "b": options.b,
                          "lexical": options.lexical_fusion, "rerank_depth": options.rerank_depth})
    spec = options.reranker
    if not (spec is None or isinstance(spec, (str, Reranker))):
        raise ConfigError(f"reranker must be a name, None or a Reranker, not {type(spec).__name__}")
    return replace(options, fusion=check_fusion(options.fusion), dense_weight=check_dense_weight(options.dense_weight),
                   group=check_group(options.group), floor=floor_option(embedder, options.floor),
                   cut=cut_option(embedder, options.cut),
                   reranker=get_reranker(spec) if isinstance(spec, str) or spec is None else spec)


def derived_options(current: Options, embedder: Embedder, changes: dict[str, Any]) -> Options:
    """``Memory.derive``'s options: the checked ``current`` with ``changes``, checked."""
    unknown = set(changes) - {f.name for f in fields(Options)}
    if unknown:
        raise ConfigError(f"derive() takes search options only, not {', '.join(sorted(unknown))}")
    return checked_options(replace(current, **changes), embedder)
