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
    if not chunks:
        return
    counts = [(chunk_id, Counter(terms)) for chunk_id, terms in chunks]
    term_ids = blocks.term_ids({t for _, c in counts for t in c}, create=True)
    grouped: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for chunk_id, counter in counts:
        block, offset = block_of(chunk_id)
        for term, tf in counter.items():
            grouped[(term_ids[term], block)].append((offset, min(tf, MAX_TF)))
    existing = blocks.read_blocks(list(grouped))
    blocks.write_blocks({key: existing.get(key, b"") + pack(pairs) for key, pairs in grouped.items()})
    blocks.add_stats(len(chunks), sum(sum(c.values()) for _, c in counts))


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
