"""The posting-block codec and its upkeep, shared by every store.

Postings are grouped per (term, block of 1,024 consecutive chunk ids) and packed as
little-endian uint16 pairs (chunk id - block * 1024, term frequency). A store keeps the blocks
as opaque bytes and hands this module a ``PostingBlocks`` view of one app inside its write
transaction; everything that decides what a block holds happens here.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence

import numpy as np

from ..store.base import PostingBlocks
from .analyze import analyze
from .state import status_reason

BLOCK_BITS = 10
BLOCK_SIZE = 1 << BLOCK_BITS
MAX_TF = 65535  # term frequency is stored as uint16


def pack(pairs: Sequence[tuple[int, int]]) -> bytes:
    return np.asarray(pairs, dtype="<u2").tobytes()


def unpack(data: bytes) -> np.ndarray:
    """(n, 2) uint16 array of (offset in block, term frequency)."""
    return np.frombuffer(data, dtype="<u2").reshape(-1, 2)


def block_of(chunk_id: int) -> tuple[int, int]:
    """(block number, offset in block) of a chunk id."""
    return chunk_id >> BLOCK_BITS, chunk_id & (BLOCK_SIZE - 1)


def add(blocks: PostingBlocks, chunks: Sequence[tuple[int, Sequence[str]]]) -> None:
    """Index chunks (ascending ids, each with its analyzed terms): appends keep blocks sorted."""
    batch = Batch(blocks)
    batch.add(chunks)
    batch.flush()


class Batch:
    """Several ``add`` calls with one read and one write of the blocks they touch, at ``flush``.

    Term ids are assigned at each ``add``, in call order: exactly the ids separate ``add`` calls
    assign (BM25 sums terms in ascending term id, so the scores stay the same to the bit), and
    the blocks end up byte for byte the same. Chunk ids must ascend across the calls. Flush
    before anything reads the blocks or the statistics (``remove``): until then they lag."""

    def __init__(self, blocks: PostingBlocks):
        self.blocks = blocks
        self.n_docs = 0
        self.total_len = 0
        # Terms whose id this batch already knows (they exist: asking again creates nothing).
        self.known: dict[str, int] = {}
        # One entry per (chunk, distinct term), in chunk id order.
        self._terms: list[int] = []
        self._chunks: list[int] = []
        self._tfs: list[int] = []

    def add(self, chunks: Sequence[tuple[int, Sequence[str]]]) -> None:
        if not chunks:
            return
        counts = [(chunk_id, Counter(terms)) for chunk_id, terms in chunks]
        known = self.known
        unknown = {t for _, c in counts for t in c if t not in known}
        if unknown:
            known.update(self.blocks.term_ids(unknown, create=True))
        for chunk_id, counter in counts:
            self._terms.extend([known[t] for t in counter])
            self._tfs.extend(counter.values())
            self._chunks.extend([chunk_id] * len(counter))
            self.total_len += counter.total()
        self.n_docs += len(chunks)

    def flush(self) -> None:
        if not self.n_docs:
            return
        if not self._terms:  # chunks of stopwords only: counted, no posting to write
            self.blocks.add_stats(self.n_docs, self.total_len)
            self.n_docs = self.total_len = 0
            return
        terms = np.asarray(self._terms, dtype=np.int64)
        chunks = np.asarray(self._chunks, dtype=np.int64)
        blocks_of = chunks >> BLOCK_BITS
        # Group by (term, block), keeping chunk id order inside each group (a stable sort).
        key = (terms << 32) | blocks_of
        order = np.argsort(key, kind="stable")
        key = key[order]
        pairs = np.empty((len(order), 2), dtype="<u2")
        pairs[:, 0] = (chunks & (BLOCK_SIZE - 1))[order]
        pairs[:, 1] = np.minimum(np.asarray(self._tfs, dtype=np.int64), MAX_TF)[order]
        starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        ends = np.r_[starts[1:], len(key)]
        packed = pairs.tobytes()
        grouped = {
            (int(k >> 32), int(k & 0xFFFFFFFF)): packed[4 * s : 4 * e]
            for k, s, e in zip(key[starts].tolist(), starts.tolist(), ends.tolist())
        }
        existing = self.blocks.read_blocks(list(grouped))
        self.blocks.write_blocks({k: existing.get(k, b"") + data for k, data in grouped.items()})
        self.blocks.add_stats(self.n_docs, self.total_len)
        self._terms, self._chunks, self._tfs = [], [], []
        self.n_docs = self.total_len = 0


def remove(blocks: PostingBlocks, chunks: Sequence[tuple[int, str, int]]) -> None:
    """Unindex chunks given as (chunk id, text, BM25 length) before their rows are deleted. A
    block left empty is deleted, and so is a term no app has a posting for any more: deleted
    text leaves nothing behind in the index. An index that is not trusted (stale, incomplete)
    is left as it is: it is refused until rebuilt anyway."""
    if not chunks or status_reason(blocks.stats(), blocks.indexed_count()) is not None:
        return
    doomed: dict[tuple[str, int], set[int]] = defaultdict(set)
    for chunk_id, text, _ in chunks:
        block, offset = block_of(chunk_id)
        for term in set(analyze(text)):
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
    blocks.add_stats(-len(chunks), -sum(length for _, _, length in chunks))
    emptied = {term_id for (term_id, _), data in updates.items() if not data}
    if emptied:
        blocks.drop_unused_terms(emptied)
