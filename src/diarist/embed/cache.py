"""A persistent embedding cache keyed by (model id, sha256 of the text): re-runs never re-embed."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from .base import Embedder, quantize


def text_key(model_id: str, text: str) -> bytes:
    return hashlib.sha256(f"{model_id}\x00{text}".encode("utf-8", "surrogatepass")).digest()


class EmbeddingCache:
    """int8 vectors (what the index stores anyway) in their own SQLite file."""

    def __init__(self, path: str | Path):
        Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        self._lock = threading.Lock()
        self._conn.execute("PRAGMA journal_mode = WAL")
        self._conn.execute("PRAGMA busy_timeout = 30000")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vector BLOB NOT NULL) "
            "WITHOUT ROWID"
        )

    def _read(self, keys: Sequence[bytes]) -> dict[bytes, bytes]:
        found: dict[bytes, bytes] = {}
        unique = list(dict.fromkeys(keys))
        with self._lock:
            for start in range(0, len(unique), 500):
                part = unique[start : start + 500]
                marks = ",".join("?" * len(part))
                found.update(self._conn.execute(f"SELECT key, vector FROM vectors WHERE key IN ({marks})", part).fetchall())
        return found

    def _write(self, rows: Sequence[tuple[bytes, bytes]]) -> None:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            self._conn.executemany("INSERT OR IGNORE INTO vectors VALUES (?, ?)", rows)
            self._conn.execute("COMMIT")

    def embed_int8(
        self,
        embedder: Embedder,
        texts: Sequence[str],
        progress: Callable[[int], None] | None = None,
    ) -> np.ndarray:
        """int8 vectors for texts, embedding (and storing) only the ones not cached yet."""
        keys = [text_key(embedder.model_id, t) for t in texts]
        found = self._read(keys)
        missing = {k: t for k, t in zip(keys, texts) if k not in found}
        if progress is not None:
            progress(len(texts) - sum(1 for k in keys if k in missing))
        if missing:
            miss_keys = list(missing)
            counts = {k: 0 for k in miss_keys}
            for k in keys:
                if k in counts:
                    counts[k] += 1
            vectors = quantize(embedder.embed_passages([missing[k] for k in miss_keys]))
            rows = [(k, v.tobytes()) for k, v in zip(miss_keys, vectors)]
            self._write(rows)
            found.update(rows)
            if progress is not None:
                progress(sum(counts.values()))
        return np.stack([np.frombuffer(found[k], dtype=np.int8) for k in keys])

    def embed_float32(self, embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
        """float32 vectors of texts, byte for byte as ``embed_passages`` gives them (the
        lines-by-meaning trim's lines); only the ones not cached yet are embedded. Kept under
        their own keys: never mistaken for the int8 ones."""
        keys = [text_key(f"{embedder.model_id}\x00float32", t) for t in texts]
        found = self._read(keys)
        missing = {k: t for k, t in zip(keys, texts) if k not in found}
        if missing:
            vectors = np.asarray(embedder.embed_passages(list(missing.values())), dtype=np.float32)
            rows = [(k, v.tobytes()) for k, v in zip(missing, vectors)]
            self._write(rows)
            found.update(rows)
        if not texts:
            return np.zeros((0, embedder.dim), np.float32)
        return np.stack([np.frombuffer(found[k], dtype=np.float32) for k in keys])

    def cached(self, keys: Sequence[bytes]) -> set[bytes]:
        """Which keys the cache holds now (other processes' writes included); embeds nothing."""
        found: set[bytes] = set()
        with self._lock:
            for start in range(0, len(keys), 500):
                part = list(keys[start : start + 500])
                marks = ",".join("?" * len(part))
                found.update(r[0] for r in self._conn.execute(f"SELECT key FROM vectors WHERE key IN ({marks})", part))
        return found

    def __len__(self) -> int:
        with self._lock:
            return self._conn.execute("SELECT count(*) FROM vectors").fetchone()[0]

    def close(self) -> None:
        self._conn.close()
