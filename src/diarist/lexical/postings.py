"""The posting-block codec and its upkeep, shared by every store.

Postings are grouped per (term, block of 8,192 consecutive chunk ids) and packed as
little-endian uint16 pairs (chunk id - block * 8192, term frequency). A store keeps the blocks
as opaque bytes and hands this module a ``PostingBlocks`` view of one app inside its write
transaction; everything that decides what a block holds happens here.

The block size trades reads against appends. A common term has one block per 8,192 chunks (122
rows to read at a million chunks; 977 with the first format's 1,024), while an append rewrites
the term's last block (at most 32 KiB). Measured at 100k chunks: one-call bulk build 8.9 s against
11.6 s, one session added 11.0 against 7.9 ms (BENCHMARKS.md, "Posting blocks of 8,192").
"""

from __future__ import annotations

import itertools
import logging
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from typing import Literal, Protocol, runtime_checkable

import numpy as np

from ..store.base import PostingBlocks
from .analyze import analyze
from .language import ENGLISH, detect
from .state import status_reason

log = logging.getLogger("diarist")

BLOCK_BITS = 13
BLOCK_SIZE = 1 << BLOCK_BITS
#: The block size of the first format (lexical.VERSION 1), which ``repack`` converts from.
FIRST_FORMAT_BLOCK_BITS = 10
#: Rows of repacked postings handed to a store per statement.
REPACK_BATCH = 20_000
#: What the stores' migrations tell a user when they repack an existing index (once).
REPACK_NOTICE = ("repacking the BM25 index into blocks of 8,192 chunk ids, once, in one transaction "
                 "(about 40 s a million chunks)")
#: What the stores' migrations tell a user when they re-analyse an index with stemmed terms (once).
RESTEM_NOTICE = ("re-analysing the BM25 index with stemmed terms (lexical version 3), once, in one "
                 "transaction (about 2 minutes a million chunks)")
#: What the stores' migrations tell a user when they re-analyse an app holding Arabic or Russian
#: chunks with the rules of lexical version 4 (once).
REANALYSE_NOTICE = ("re-analysing the BM25 index of the apps holding Arabic or Russian memories (lexical "
                    "version 4), once, in one transaction (about 2 minutes a million chunks)")
MAX_TF = 65535  # term frequency is stored as uint16


def pack(pairs: Sequence[tuple[int, int]]) -> bytes:
    return np.asarray(pairs, dtype="<u2").tobytes()


def unpack(data: bytes) -> np.ndarray:
    """(n, 2) uint16 array of (offset in block, term frequency)."""
    return np.frombuffer(data, dtype="<u2").reshape(-1, 2)


def repack(blocks: Sequence[tuple[int, bytes]], from_bits: int, to_bits: int) -> list[tuple[int, bytes]]:
    """One term's blocks, (block number, data) in ascending number, regrouped into blocks of
    ``1 << to_bits`` chunk ids: the same postings, chunk ids ascending in each block."""
    if not 0 < to_bits <= 16:
        raise ValueError(f"an offset of {to_bits} bits does not fit the uint16 codec")
    if not blocks:
        return []
    numbers = np.asarray([number for number, _ in blocks], dtype=np.int64)
    counts = np.fromiter((len(data) // 4 for _, data in blocks), dtype=np.int64, count=len(blocks))
    if np.any(numbers[1:] <= numbers[:-1]):
        raise ValueError("posting blocks must be given in ascending block number")
    pairs = unpack(b"".join(data for _, data in blocks))
    ids = (np.repeat(numbers, counts) << from_bits) + pairs[:, 0]
    new_numbers = ids >> to_bits
    out = np.empty_like(pairs)
    out[:, 0] = ids & ((1 << to_bits) - 1)
    out[:, 1] = pairs[:, 1]
    heads = np.flatnonzero(np.r_[True, new_numbers[1:] != new_numbers[:-1]])
    ends = np.r_[heads[1:], len(ids)]
    packed = out.tobytes()
    return [(int(new_numbers[s]), packed[4 * s : 4 * e]) for s, e in zip(heads.tolist(), ends.tolist())]


def repack_index(rows: Iterable[tuple[int, int, int, bytes]], apps: Collection[int],
                 write: Callable[[list[tuple[int, int, int, bytes]]], None], from_bits: int, to_bits: int) -> int:
    """A store's format migration: its posting rows (app id, term id, block, data), sorted by the
    three, handed to ``write`` in batches as rows of blocks of ``1 << to_bits``. Rows of apps
    not in ``apps`` (an index of another version, refused anyway) are dropped; returns how
    many were. Says so on the ``diarist`` logger when there is anything to repack."""
    dropped = 0
    told = False

    def repacked() -> Iterator[tuple[int, int, int, bytes]]:
        nonlocal dropped, told
        for (app_id, term_id), group in itertools.groupby(rows, key=lambda row: (row[0], row[1])):
            if not told:
                log.warning(REPACK_NOTICE)
                told = True
            if app_id not in apps:
                dropped += sum(1 for _ in group)
                continue
            blocks = [(block, bytes(data)) for _, _, block, data in group]
            for number, data in repack(blocks, from_bits, to_bits):
                yield app_id, term_id, number, data

    stream = repacked()
    while batch := list(itertools.islice(stream, REPACK_BATCH)):
        write(batch)
    return dropped


def block_of(chunk_id: int) -> tuple[int, int]:
    """(block number, offset in block) of a chunk id."""
    return chunk_id >> BLOCK_BITS, chunk_id & (BLOCK_SIZE - 1)


#: How ``analysed_pages`` chooses the language each chunk is analysed in: "detect" it (and
#: record it: ``diarist reindex``), keep the one "recorded" with the chunk (English where none was),
#: or analyse all as "english" (a migration that runs before chunks record a language).
Languages = Literal["detect", "recorded", "english"]


def analysed_pages(page: Callable[[int], Sequence[tuple[int, str, str | None]]], *,
                   languages: Languages = "detect") -> Iterator[list[tuple[int, list[str], str]]]:
    """A store's chunks (id, text, recorded language or None), analysed a page at a time:
    ``page(last)`` gives the next rows with ids above ``last``, ascending (keyset paging, no read
    left open between pages), so a rebuild holds one page in memory at any app size. Each chunk
    comes back as (id, terms, the language it was analysed in)."""
    def language_of(text: str, recorded: str | None) -> str:
        if languages == "detect":
            return detect(text)
        return (recorded if languages == "recorded" else None) or ENGLISH

    last = -1
    while rows := page(last):
        yield [(int(chunk_id), analyze(text, language=language), language)
               for chunk_id, text, language in ((i, t, language_of(t, r)) for i, t, r in rows)]
        last = int(rows[-1][0])


def add(blocks: PostingBlocks, chunks: Sequence[tuple[int, Sequence[str]]]) -> None:
    """Index chunks (ascending ids, each with its analyzed terms): appends keep blocks sorted."""
    batch = Batch(blocks)
    batch.add(chunks)
    batch.flush()


@runtime_checkable
class OrderedTermCreation(Protocol):
    """Optional on a ``PostingBlocks``: create absent terms in one statement, in the given order."""

    def create_terms(self, ordered: Sequence[str]) -> dict[str, int]:
        """Add terms none of which exists yet, each the largest id + 1 in the order given."""


def _count_pairs(terms: np.ndarray, chunks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct (term, chunk) pairs sorted by term then chunk, which is (term, block, chunk),
    with how often each occurs (the term frequency)."""
    if len(terms) and int(terms.max()) < 1 << 31 and int(chunks.max()) < 1 << 32:
        # One int64 key sorts in a fraction of the time of a two-key lexsort.
        keys, tf = np.unique((terms << 32) | chunks, return_counts=True)
        return keys >> 32, keys & 0xFFFFFFFF, tf
    order = np.lexsort((chunks, terms))
    terms, chunks = terms[order], chunks[order]
    starts = np.flatnonzero(np.r_[True, (terms[1:] != terms[:-1]) | (chunks[1:] != chunks[:-1])])
    return terms[starts], chunks[starts], np.diff(np.r_[starts, len(terms)])


class Batch:
    """Several ``add`` calls with one read and one write of the blocks they touch, at ``flush``.

    Term ids are assigned at ``flush``, but in the order separate ``add`` calls would assign
    them (each call's new terms sorted, calls in order): BM25 sums terms in ascending term id,
    so the scores stay the same to the bit, and the blocks end up byte for byte the same.
    Chunk ids must ascend across the calls. Flush before anything reads the blocks or the
    statistics (``remove``): until then they lag."""

    def __init__(self, blocks: PostingBlocks):
        self.blocks = blocks
        self.n_docs = 0
        self.total_len = 0
        # Per add call, its terms as given (ids are resolved at flush, counted there in numpy).
        self._calls: list[list[str]] = []
        self._chunk_ids: list[int] = []  # one per term given, parallel to the calls' terms

    def add(self, chunks: Sequence[tuple[int, Sequence[str]]]) -> None:
        if not chunks:
            return
        terms: list[str] = []
        for chunk_id, chunk_terms in chunks:
            terms.extend(chunk_terms)
            self._chunk_ids.extend([chunk_id] * len(chunk_terms))
        self._calls.append(terms)
        self.total_len += len(terms)
        self.n_docs += len(chunks)

    def _term_ids(self) -> dict[str, int]:
        """Ids of every term of the pending calls, creating the absent ones in call order.
        Looked up afresh at each flush: a remove between two flushes may drop terms."""
        groups = [set(terms) for terms in self._calls]
        wanted = set().union(*groups)
        known = self.blocks.term_ids(wanted, create=False)
        missing = wanted.difference(known)
        fresh: list[list[str]] = []
        for group in groups:
            if not missing:
                break
            new = sorted(missing.intersection(group))
            if new:
                fresh.append(new)
                missing.difference_update(new)
        if fresh and isinstance(self.blocks, OrderedTermCreation):
            known.update(self.blocks.create_terms([t for new in fresh for t in new]))
        else:  # one call per group: the ids those calls have always given
            for new in fresh:
                known.update(self.blocks.term_ids(new, create=True))
        return known

    def _grouped(self, known: dict[str, int]) -> dict[tuple[int, int], bytes]:
        """The pending postings packed per (term id, block), chunk ids ascending in each."""
        terms = np.fromiter(map(known.__getitem__, itertools.chain.from_iterable(self._calls)),
                            dtype=np.int64, count=len(self._chunk_ids))
        chunks = np.asarray(self._chunk_ids, dtype=np.int64)
        terms, chunks, tf = _count_pairs(terms, chunks)
        pairs = np.empty((len(terms), 2), dtype="<u2")
        pairs[:, 0] = chunks & (BLOCK_SIZE - 1)
        pairs[:, 1] = np.minimum(tf, MAX_TF)
        blocks_of = chunks >> BLOCK_BITS
        heads = np.flatnonzero(np.r_[True, (terms[1:] != terms[:-1]) | (blocks_of[1:] != blocks_of[:-1])])
        ends = np.r_[heads[1:], len(terms)].tolist()
        packed = pairs.tobytes()
        keys = zip(terms[heads].tolist(), blocks_of[heads].tolist())
        return dict(zip(keys, [packed[4 * s : 4 * e] for s, e in zip(heads.tolist(), ends)]))

    def flush(self) -> None:
        if not self.n_docs:
            return
        if self._chunk_ids:
            grouped = self._grouped(self._term_ids())
            existing = self.blocks.read_blocks(list(grouped))
            if existing:
                grouped = {k: existing.get(k, b"") + data for k, data in grouped.items()}
            self.blocks.write_blocks(grouped)
        # Chunks of stopwords only are counted, with no posting to write.
        self.blocks.add_stats(self.n_docs, self.total_len)
        self._calls, self._chunk_ids = [], []
        self.n_docs = self.total_len = 0


def remove(blocks: PostingBlocks, chunks: Sequence[tuple[int, str, int, str]]) -> None:
    """Unindex chunks given as (chunk id, text, BM25 length, the language their terms were
    analysed in) before their rows are deleted. A
    block left empty is deleted, and so is a term no app has a posting for any more: deleted
    text leaves nothing behind in the index. An index that is not trusted (stale, incomplete)
    is left as it is: it is refused until rebuilt anyway."""
    if not chunks or status_reason(blocks.stats(), blocks.indexed_count()) is not None:
        return
    doomed: dict[tuple[str, int], set[int]] = defaultdict(set)
    for chunk_id, text, _, language in chunks:
        block, offset = block_of(chunk_id)
        for term in set(analyze(text, language=language)):
            doomed[(term, block)].add(offset)
    term_ids = blocks.term_ids({t for t, _ in doomed}, create=False)
    keyed = {(term_ids[t], b): offsets for (t, b), offsets in doomed.items() if t in term_ids}
    existing = blocks.read_blocks(list(keyed))
    updates: dict[tuple[int, int], bytes] = {}
    for key, data in existing.items():
        pairs = unpack(data)
        kept = pairs[~np.isin(pairs[:, 0], np.fromiter(keyed[key], dtype=np.uint16))]
        updates[key] = kept.astype("<u2").tobytes() if len(kept) else b""
    blocks.write_blocks(updates)
    blocks.add_stats(-len(chunks), -sum(length for _, _, length, _ in chunks))
    emptied = {term_id for (term_id, _), data in updates.items() if not data}
    if emptied:
        blocks.drop_unused_terms(emptied)
