"""The storage contract: everything the pipeline, health, keys, the server and the bench need.

A backend implements the abstract methods of ``Store`` and nothing else; the math lives
elsewhere and is shared, so every backend ranks identically:

- BM25 scoring, the posting-block codec and block upkeep live in ``diarist.lexical``. A store
  hands out a ``PostingBlocks`` view for writes (inside its own transaction) and reads blocks,
  lengths and counts back; it never analyzes text or scores.
- The dense channel (``diarist.vectors``) reads int8 vectors through ``read_vectors`` and caches
  them per process, keyed on ``AppVersion``: an epoch that is never reused across a delete and
  re-create of an app, plus generation counters bumped by every write.

Every method takes the app by name and filters by it inside the store: isolation is never left
to callers. Items are one kind of record with a ``kind`` field ("session" or "fact"), not
parallel code paths.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import numpy as np

from ..errors import ConfigError, NotFound, DiaristError
from ..types import Chunk, Message

if TYPE_CHECKING:
    from ..vectors.base import DenseIndex

KINDS: tuple[str, ...] = ("session", "fact")


@dataclass(frozen=True)
class Item:
    """A stored record, verbatim: a session (its messages) or a fact (its text)."""

    kind: str
    external_id: str
    date: str | None
    content_hash: str
    metadata: dict[str, Any] = field(default_factory=dict)
    messages: tuple[Message, ...] = ()  # sessions
    text: str | None = None  # facts

    def to_dict(self) -> dict[str, Any]:
        """The public JSON shape (the content hash is internal)."""
        key = "session_id" if self.kind == "session" else "fact_id"
        out: dict[str, Any] = {"kind": self.kind, key: self.external_id, "date": self.date,
                               "metadata": dict(self.metadata)}
        if self.kind == "session":
            out["messages"] = [dict(m.__dict__) for m in self.messages]
        else:
            out["text"] = self.text
        return out


@dataclass(frozen=True)
class ItemSummary:
    kind: str
    external_id: str
    date: str | None

    def to_dict(self) -> dict[str, Any]:
        key = "session_id" if self.kind == "session" else "fact_id"
        return {key: self.external_id, "date": self.date}


@dataclass
class IndexedChunk:
    """A chunk with everything both channels need: its int8 vector and its index terms (which
    must be ``diarist.lexical.analyze(chunk.text, language=language)``: deletes unindex what
    that gives)."""

    chunk: Chunk
    vector: np.ndarray | None  # int8, normalised before quantisation; None if not dense
    terms: list[str]
    language: str = "en"  # what the terms were analysed as (diarist.lexical.language.detect)
    # The vectors of the chunk's lines (the lines-by-meaning trim reads them): (digest of the
    # line's text, its float32 unit vector) per line, in order; empty when the store keeps none.
    lines: Sequence[tuple[bytes, np.ndarray]] = ()
    # The float32 unit vectors of its sentences when it is a short memory's chunk
    # (``diarist.read.sentences``); empty otherwise, or when the store keeps none.
    sentences: Sequence[np.ndarray] = ()


class ChunkRow(NamedTuple):
    """A chunk as search returns it. A named tuple: a search builds k of them, and a frozen
    dataclass cost 1.4 us each to build against 0.3 us."""

    chunk_id: int
    text: str
    session_id: str | None
    fact_id: str | None
    date: str | None
    roles: tuple[str, ...]
    view: str
    position: int
    first_turn: int
    last_turn: int
    metadata: Mapping[str, Any] = MappingProxyType({})  # the item's (a session's title...); read only


#: A chunk's row as a search reads it (``Store.hit_rows``): a plain tuple, fields in this order,
#: as the database returns them. A grouped search of 200 memories reads ~280 rows and builds a
#: hit of each: an object per row on the way (a ``ChunkRow``, its roles and metadata parsed)
#: cost ~1 us of its ~7 (benchmarks/results/speed46/stop52).
#: roles: the names joined by "," ("" or None: none); metadata: the item's JSON text (None: none).
HIT_ROW_FIELDS = ("chunk_id", "text", "session_id", "fact_id", "date", "roles", "view", "first_turn", "last_turn",
                  "metadata")
HitRow = tuple[int, str, str | None, str | None, str | None, str | None, str, int | None, int | None, str | None]


@dataclass(frozen=True)
class ItemVersion:
    """A previous version of an item, kept when ``Memory.update`` replaced it."""

    replaced_at: str
    item: Item

    def check_belongs(self, kind: str, external_id: str) -> None:
        if (self.item.kind, self.item.external_id) != (kind, external_id):
            raise ValueError(f"a version of {self.item.kind} {self.item.external_id!r} is not one of "
                             f"{kind} {external_id!r}")

    def to_dict(self) -> dict[str, Any]:
        return {"replaced_at": self.replaced_at, **self.item.to_dict()}


@dataclass(frozen=True)
class StoredChunk:
    """A chunk of an item as stored, with its int8 vector: what ``put_items`` was given, less the
    terms (``lexical.analyze(chunk.text)`` gives them back). ``chunk.dense`` is whether it has a
    vector, ``chunk.lexical`` whether it has postings."""

    chunk_id: int
    chunk: Chunk
    vector: np.ndarray | None  # int8 (dim,), or None when the chunk has no vector


@dataclass(frozen=True)
class SampleChunk:
    """An app's most recent chunk as stored, for the health self-check."""

    chunk_id: int
    text: str
    vector: np.ndarray | None  # int8 (dim,), or None when the chunk has no vector
    lexical: bool  # has postings
    embed_text: str | None  # what the vector reads, when not the whole text
    language: str = "en"  # what its terms were analysed as (English where none was recorded)


@dataclass(frozen=True)
class AppVersion:
    """What a per-process cache of an app's index is valid for.

    ``epoch`` is drawn at random when the app is created and never reused, so a cache of a
    deleted app can never be taken for the app re-created under the same name (or the same
    integer id). ``generation`` moves with every write, ``purge_generation`` with every write
    that removed chunks (a cache may then not be extended, only rebuilt)."""

    epoch: str
    generation: int
    purge_generation: int


@dataclass(frozen=True)
class VectorBatch:
    """Vectors read in one snapshot, with the version of the app they were read at."""

    version: AppVersion | None  # None: the app holds nothing
    ids: np.ndarray  # int64, ascending
    vectors: np.ndarray  # int8 (n, dim)


@dataclass(frozen=True)
class LexicalStats:
    version: int  # analyzer / postings format the index was written with
    n_docs: int
    total_len: int


@dataclass(frozen=True)
class DocLengths:
    """Every lexical chunk of an app with its BM25 length, read in one snapshot."""

    version: AppVersion | None  # None: the app holds nothing
    ids: np.ndarray  # int64, ascending
    lengths: np.ndarray  # float64 as stores read them (the lexical channel keeps whole ones as uint16)


@dataclass(frozen=True)
class PostingsRead:
    """An app's index statistics and the posting blocks of some terms, in one snapshot."""

    version: AppVersion | None  # None: the app holds nothing
    stats: LexicalStats | None  # None: the index was never built or was marked stale
    blocks: dict[int, list[tuple[int, bytes]]]  # term id -> [(block number, packed postings)]


@dataclass(frozen=True)
class AppCounts:
    sessions: int
    messages: int
    facts: int
    chunks: int


@dataclass(frozen=True)
class KeyRecord:
    """A stored API key: its hash stays in the store, never leaves it."""

    id: int
    app: str
    prefix: str
    label: str | None
    created_at: str
    revoked_at: str | None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class SyncedFile:
    """A file ``diarist sync`` brought into an app: where it is (``path`` inside the folder
    synced, ``root`` that folder), what it held when read (``sha256`` of its bytes; ``size`` and
    ``mtime_ns`` for a check without reading it) and the items it produced, as (kind, id)."""

    root: str
    path: str
    sha256: str
    size: int
    mtime_ns: int
    items: tuple[tuple[str, str], ...] = ()


class PostingBlocks(Protocol):
    """One app's posting blocks inside an open write transaction (``diarist.lexical.postings``
    does the upkeep through it). Blocks are keyed by (term id, block number)."""

    def term_ids(self, terms: Collection[str], *, create: bool) -> dict[str, int]: ...

    def read_blocks(self, keys: Collection[tuple[int, int]]) -> dict[tuple[int, int], bytes]: ...

    def write_blocks(self, blocks: Mapping[tuple[int, int], bytes]) -> None:
        """Replace blocks; an empty value deletes the block."""

    def add_stats(self, n_docs: int, total_len: int) -> None: ...

    def stats(self) -> LexicalStats | None: ...

    def indexed_count(self) -> int:
        """Chunks of the app that are meant to have postings (the count the stats must match)."""

    def drop_unused_terms(self, term_ids: Collection[int]) -> None:
        """Forget terms of the dictionary that no app has a posting for any more."""


class LexicalUnavailable(Exception):
    """The lexical index cannot be trusted for this app; the message says why."""


class Store(ABC):
    """The full storage contract. ``tests/support/store_contract.py`` runs against every backend."""

    #: Where the data lives, for messages ("memory.sqlite", ":memory:", a URL without password).
    location: str = "this store"

    # -- lifecycle and transactions ------------------------------------------------------

    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def transaction(self) -> AbstractContextManager[None]:
        """One write transaction: everything inside lands, or nothing does. Nestable: an inner
        block joins the outer one. The store's own writes each run in one (joining any open)."""

    def snapshot(self) -> AbstractContextManager[None]:
        """Reads of this thread inside see one state of the database, whatever other writers
        commit meanwhile (``diarist export``). A store whose reads cannot interleave with
        writes needs nothing here."""
        return nullcontext()

    # -- meta -----------------------------------------------------------------------------

    @abstractmethod
    def get_meta(self, key: str) -> str | None: ...

    @abstractmethod
    def claim_meta(self, values: Mapping[str, str]) -> dict[str, str]:
        """Store each value whose key is absent, under the write lock, and return the stored
        value of every key: the first writer's choice wins, later ones read it back."""

    def put_meta(self, values: Mapping[str, str]) -> None:
        """Store each value, replacing what the key held (``diarist migrate --embedder``
        records its progress and, at the end, the new model)."""
        raise NotImplementedError(f"{type(self).__name__} cannot replace its meta")

    def delete_meta(self, keys: Sequence[str]) -> None:
        """Remove these keys (absent ones are passed over)."""
        raise NotImplementedError(f"{type(self).__name__} cannot replace its meta")

    # -- apps -----------------------------------------------------------------------------

    @abstractmethod
    def apps(self) -> list[str]: ...

    @abstractmethod
    def app_version(self, app: str) -> AppVersion | None:
        """None when the app was never written or was deleted with ``delete_app`` (an app whose
        items were all deleted one by one still exists, empty)."""

    @abstractmethod
    def delete_app(self, app: str) -> bool:
        """Delete everything the app holds; False if it does not exist."""

    #: Whether this store keeps the vectors of chunks' lines (``line_vectors``); one that does
    #: not leaves the trim to embed the lines it shows.
    keeps_lines: bool = False

    def line_vectors(self, app: str, digests: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        """The float32 vectors stored for lines of the app's chunks, by the digest of the line's
        text (``diarist.read.lines.line_digest``); a digest not found is left out."""
        return {}

    def chunks_without_lines(self, app: str, after_id: int, limit: int) -> list[tuple[int, str]]:
        """(chunk id, text) of up to ``limit`` of the app's chunks past ``after_id`` whose lines
        have no stored vectors (stored before the store kept them), in id order."""
        return []

    def put_line_vectors(self, app: str, chunks: Sequence[tuple[int, Sequence[tuple[bytes, np.ndarray]]]]) -> int:
        """Store the line vectors of chunks already stored, as (chunk id, lines as in
        ``IndexedChunk.lines``); a chunk deleted meanwhile, or one that has its lines, is passed
        over. Returns how many chunks got their lines."""
        raise NotImplementedError(f"{type(self).__name__} keeps no line vectors")

    def drop_line_vectors(self) -> int:
        """Delete every stored line vector of every app (a model switch re-embeds them with
        the chunks); returns how many were deleted."""
        return 0

    #: Whether this store keeps the vectors of short memories' sentences (``sentence_vectors``);
    #: one that does not reads every memory by its chunks' cosine alone.
    keeps_sentences: bool = False

    def sentence_vectors(self, app: str, chunk_ids: Sequence[int]) -> dict[int, np.ndarray]:
        """Chunk id -> the float32 vectors stored for its sentences (one row each), for those of
        the app's ``chunk_ids`` that have any (a short memory's chunks)."""
        return {}

    def put_sentence_vectors(self, app: str, chunks: Sequence[tuple[int, Sequence[np.ndarray]]]) -> int:
        """Store the sentences' vectors of chunks already stored, as (chunk id, vectors); a chunk
        deleted meanwhile, or one that has its sentences, is passed over. Returns how many chunks
        got theirs."""
        raise NotImplementedError(f"{type(self).__name__} keeps no sentence vectors")

    def drop_sentence_vectors(self) -> int:
        """Delete every stored sentence vector of every app (a model switch re-embeds them with
        the chunks); returns how many were deleted."""
        return 0

    def sentences_indexed(self, app: str) -> bool:
        """Whether the app's short memories have their sentences' vectors: False only for an app
        that held chunks before the store kept them, until ``mark_sentences_indexed``."""
        return True

    def mark_sentences_indexed(self, app: str, indexed: bool = True) -> None:
        """Record whether the app's short memories have their sentences' vectors (``Memory.index_sentences``)."""

    def titles_indexed(self, app: str) -> bool:
        """Whether the app's titled items were chunked with their title line (write.chunk.title_line).
        False only for an app stored before titles were indexed, until ``mark_titles_indexed``;
        a store that never held such an app answers True."""
        return True

    def mark_titles_indexed(self, app: str, indexed: bool = True) -> None:
        """Record whether the app's titled items carry their title line (``Memory.index_titles``; False:
        ``diarist migrate`` copying an app that still waits for it)."""

    # -- items ----------------------------------------------------------------------------

    @abstractmethod
    def content_hashes(self, app: str, kind: str, external_ids: Sequence[str]) -> dict[str, str]:
        """external id -> stored content hash, for the ids that exist."""

    @abstractmethod
    def put_items(
        self,
        app: str,
        items: Sequence[tuple[Item, Sequence[IndexedChunk]]],
        *,
        expect: Mapping[tuple[str, str], str | None] | None = None,
        archive: bool = False,
    ) -> None:
        """Store items with their chunks, vectors and postings in one transaction, replacing any
        with the same (kind, id). ``expect``: (kind, id) -> the content hash the caller read (None:
        absent); if any differs now, nothing is written and ``Conflict`` is raised (an atomic
        read-modify-write across processes). ``archive``: keep each replaced item's record as a
        version (``item_history``); deleting the item deletes its versions."""

    @abstractmethod
    def delete_item(self, app: str, kind: str, external_id: str) -> bool:
        """Delete an item with its chunks, vectors and postings; False if absent."""

    @abstractmethod
    def get_item(self, app: str, kind: str, external_id: str) -> Item | None: ...

    @abstractmethod
    def list_items(self, app: str, kind: str, limit: int, offset: int, *, newest_first: bool = False) -> list[ItemSummary]:
        """Items of one kind in the order they were last stored (a replace moves an item to
        the end), or that order reversed, paged."""

    @abstractmethod
    def item_history(self, app: str, kind: str, external_id: str) -> list[ItemVersion]:
        """The kept previous versions of an item, oldest first (empty when none)."""

    def put_history(self, app: str, kind: str, external_id: str, versions: Sequence[ItemVersion]) -> None:
        """Append previous versions of a stored item, as given (their ``replaced_at`` kept),
        after any it has: how ``diarist migrate`` copies a history. Raises ``NotFound`` if the
        item is not stored, ``ValueError`` if a version belongs to another item; then nothing
        is written."""
        for version in versions:
            version.check_belongs(kind, external_id)
        with self.transaction():
            if self.get_item(app, kind, external_id) is None:
                raise NotFound(f"no {kind} {external_id!r} in app {app!r}")
            self._append_versions(app, versions)

    @abstractmethod
    def _append_versions(self, app: str, versions: Sequence[ItemVersion]) -> None:
        """Store versions of an item known to exist, inside the caller's transaction."""

    @abstractmethod
    def chunk_ids_where(self, app: str, where: Mapping[str, Any]) -> np.ndarray:
        """Ascending ids of the app's chunks whose item's metadata has every key of ``where``
        equal to its value (top-level keys; values compared as JSON): the filter of a search
        runs inside the store, before any ranking is cut."""

    @abstractmethod
    def counts(self, app: str) -> AppCounts | None: ...

    # -- chunks ---------------------------------------------------------------------------

    @abstractmethod
    def fetch_chunks(self, app: str, chunk_ids: Sequence[int]) -> dict[int, ChunkRow]:
        """The chunks of this app among the ids (others, and deleted ones, are left out)."""

    def hit_rows(self, app: str, chunk_ids: Sequence[int]) -> dict[int, HitRow]:
        """``fetch_chunks`` as the read path reads it: each chunk a ``HitRow`` tuple (roles and
        metadata as stored text), so building a hit makes no object in between. The default
        converts ``fetch_chunks``'s rows; a backend answers it from its own rows."""
        return {cid: (row.chunk_id, row.text, row.session_id, row.fact_id, row.date, ",".join(row.roles), row.view,
                      row.first_turn, row.last_turn, json.dumps(dict(row.metadata)) if row.metadata else None)
                for cid, row in self.fetch_chunks(app, chunk_ids).items()}

    def chunks_in_other_languages(self, app: str, chunk_ids: Sequence[int], language: str) -> set[int]:
        """The chunks among the ids whose terms were analysed in another language than
        ``language`` (a chunk stored before languages were recorded counts as English). A store
        that records no language: none."""
        return set()

    def language_counts(self, app: str) -> dict[str | None, int]:
        """How many of the app's chunks were analysed in each language (None: stored before
        languages were recorded). A store that records no language: none."""
        return {}

    @abstractmethod
    def sample_chunk(self, app: str) -> SampleChunk | None: ...

    @abstractmethod
    def item_chunks(self, app: str, kind: str, external_id: str) -> list[StoredChunk]:
        """One item's chunks as stored, in chunk id order (the order ``put_items`` got them), with
        their vectors; [] when the item is absent. What ``diarist migrate`` copies a store with."""

    def items_with_chunks(self, app: str, kind: str,
                          external_ids: Sequence[str]) -> list[tuple[Item, list[StoredChunk]]]:
        """The stored items among ``external_ids`` (in that order; one not stored is left out),
        each with its chunks (``get_item``, ``item_chunks``). This default reads them one at a
        time; the SQL stores read a batch in a few statements."""
        items = (self.get_item(app, kind, e) for e in dict.fromkeys(external_ids))
        return [(item, self.item_chunks(app, kind, item.external_id)) for item in items if item is not None]

    # -- the dense channel's storage ---------------------------------------------------------

    @abstractmethod
    def read_vectors(self, app: str, after_id: int = 0) -> VectorBatch:
        """The app's vectors with chunk id > after_id, ascending, in one snapshot. Chunk ids of
        an app must grow in commit order for incremental reads to be complete."""

    # -- the lexical channel's storage -------------------------------------------------------

    @abstractmethod
    def doc_lengths(self, app: str) -> DocLengths: ...

    @abstractmethod
    def read_postings(self, app: str, terms: Collection[str]) -> PostingsRead: ...

    def read_posting_block(self, app: str, term: str, block: int) -> bytes | None:
        """One posting block of one term (None: none). This default reads the term's whole list;
        a backend that can read one block (SQLite) overrides it, so ``/health`` costs the same at
        any size."""
        read = self.read_postings(app, [term])
        found = [data for rows in read.blocks.values() for number, data in rows if number == block]
        return found[0] if found else None

    @abstractmethod
    def mark_lexical_stale(self, app: str) -> None:
        """Forget the app's index statistics, so the channel refuses it until rebuilt."""

    @abstractmethod
    def rebuild_lexical(self, app: str) -> int:
        """Rebuild the app's postings from its stored chunk text with ``diarist.lexical.analyze``
        (the one analyzer, versioned by ``lexical.VERSION``: deletes unindex with it too), in one
        transaction; returns the number of chunks indexed."""

    # -- synced files (diarist sync) -------------------------------------------------------

    @abstractmethod
    def synced_files(self, app: str) -> list[SyncedFile]:
        """Every file recorded for the app by ``record_synced_files``, by (root, path)."""

    @abstractmethod
    def record_synced_files(self, app: str, put: Sequence[SyncedFile],
                            drop: Sequence[tuple[str, str]] = ()) -> None:
        """In one transaction: store each file of ``put`` (replacing the record of the same
        root and path) and forget each (root, path) of ``drop``. The app is created if needed;
        deleting the app forgets its records."""

    # -- API keys ---------------------------------------------------------------------------

    @abstractmethod
    def add_key(self, app: str, key_hash: str, prefix: str, label: str | None, created_at: str) -> KeyRecord: ...

    @abstractmethod
    def find_keys(self, *, key_id: int | None = None, key_hash: str | None = None,
                  prefix: str | None = None) -> list[KeyRecord]:
        """Keys matching the one criterion given (revoked ones included)."""

    @abstractmethod
    def list_keys(self, app: str | None = None, *, include_revoked: bool = False) -> list[KeyRecord]: ...

    @abstractmethod
    def revoke_key(self, key_id: int, at: str) -> KeyRecord | None:
        """Mark a key revoked (once; a second revoke keeps the first time)."""

    @abstractmethod
    def key_hashes(self) -> dict[int, str]:
        """Key id -> stored hash, for every key (revoked ones too). Only for copying a store into
        another (``diarist migrate``): no other caller reads a hash back."""

    # -- size ---------------------------------------------------------------------------

    def size_bytes(self) -> int | None:
        """Bytes on disk, where the backend knows; None otherwise."""
        return None

    # -- backup -------------------------------------------------------------------------

    def backup(self, dest: str, *, overwrite: bool = False) -> None:
        """A consistent copy of the whole store into the new file ``dest``, taken while writers
        run; never over an existing file unless ``overwrite``. Backends that can, implement it."""
        raise ConfigError(
            f"backups of this store are not supported: {type(self).__name__} ({self.location}) "
            "has no backup; copy its data with its own tools"
        )

    # -- optional capabilities: a default here, overridden by the backends that have them -----
    # Callers ask these; they never probe a store for attributes (tests/test_layout.py).

    def native_dense_index(self, mode: str) -> DenseIndex | None:
        """A dense index the backend runs itself for ``dense=mode`` ("hnsw" or "auto"; PostgreSQL:
        pgvector's HNSW index in the database), or None: the process keeps its own."""
        return None

    def index_directory(self) -> Path | None:
        """Where indexes derived from this store persist beside it (SQLite: ``<file>.hnsw/``), or
        None: they are held in memory only."""
        return None

    def page_size(self) -> int | None:
        """Bytes per page of the store's file, or None where the backend has no such pages."""
        return None

    def compacted_page_size(self) -> int | None:
        """The page size ``compact`` rewrites the store in, or None when it cannot be compacted."""
        return None

    def unknown_schema_objects(self) -> list[str] | None:
        """Tables, indexes, triggers or views the store holds that diarist did not create (a
        trigger copying deleted text elsewhere would defeat forgetting), or None where the
        backend does not check."""
        return None

    def translate_error(self, exc: BaseException) -> DiaristError | None:
        """The backend's own failure ``exc`` (a sqlite3 or psycopg error that escaped a store
        call) as the diarist error it means, with that error's HTTP status (a full disk, a
        read-only database, a lost connection: ``StoreError``, 503), or None when ``exc`` is not
        the backend's. The server answers with it instead of a 500."""
        return None

    @classmethod
    def restore(cls, src: str, location: str, *, force: bool = False) -> Any:
        """Put the backup file ``src`` in place of the store at ``location`` (``force``: over an
        existing one); returns a report with ``target``, ``bytes``, ``apps`` and ``method``."""
        raise ConfigError(f"diarist restore puts a backup in place of a SQLite file, not {location!r}; "
                          f"restore {cls.__name__} with its own tools")

    @classmethod
    def compact(cls, location: str) -> Any:
        """Rewrite the store at ``location`` whole, giving back freed space; returns a report with
        ``path``, ``bytes_before``, ``bytes_after``, ``page_size_before`` and ``page_size_after``."""
        raise ConfigError(f"diarist compact rewrites a SQLite file, not {location!r}; "
                          f"compact {cls.__name__} with its own tools")


class Conflict(Exception):
    """An item changed between the caller's read and its write (see ``Store.put_items``)."""
