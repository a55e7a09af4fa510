"""The store contract on PostgreSQL + pgvector: ``open_store("postgresql://user@host/db")``.

Needs the ``postgres`` extra (``pip install 'diarist[postgres]'``: psycopg 3 and psycopg-pool)
and a server with pgvector (``CREATE EXTENSION vector`` is run when the user may; otherwise the
error says what to run). The tables live in the connection's current schema: add
``?options=-csearch_path%3Dname`` to the URL to keep a memory in its own schema.

Layout (``migrations.py``): the tables of the SQLite store, with the same meaning. Chunks keep
their vector twice: ``vector_i8`` (bytea, the normalised int8 bytes that ``read_vectors``
returns, so the shared exact index ranks exactly as on SQLite) and ``embedding`` (pgvector
``vector``, the same int8 values as floats: cosine over it orders as the exact channel does).
The BM25 index has SQLite's shape: the ``lex_terms`` dictionary shared by every app, posting
blocks as bytea keyed (app_id, term_id, block), chunk lengths, per-app ``lex_stats``, written
through ``diarist.lexical.postings`` inside the write transaction.

Concurrency (``connection.py``): one write lock per schema (an advisory transaction lock)
serialises writers as SQLite's one writer does; readers never wait and read one snapshot.
Chunk ids come from a counter row taken under that lock, so they grow in commit order (the
dense cache extends by id) and a rolled-back write hands its ids out again, as SQLite does.
Per-app write locks would let apps write in parallel, but the shared term dictionary (ids as
largest + 1, deletion of terms no app uses) and the global chunk-id counter would need their
own coordination first.

Forgetting: PostgreSQL keeps a deleted row's bytes in the table files until VACUUM reuses the
space, and in its write-ahead log (and any archive or replica). Autovacuum gets there; run
``VACUUM`` on the schema's tables to hurry it.

Dense search in SQL (``dense.py``): ``diarist.vectors.dense_index`` hands a PostgreSQL store a
``PgvectorDenseIndex``: apps of ``dense.CROSSOVER`` vectors or more are searched through one
HNSW index per dimension (``CREATE INDEX chunks_hnsw_384 ON chunks USING hnsw
((embedding::vector(384)) vector_cosine_ops) WHERE vector_dims(embedding) = 384``, built
concurrently on first need), queried with pgvector 0.8's iterative scan (``SET LOCAL
hnsw.iterative_scan = relaxed_order`` and ``hnsw.ef_search``) so that ``WHERE app_id = ...`` still
fills the depth, its candidates re-ranked exactly from ``vector_i8`` (scores equal the exact
channel's); smaller apps get the exact scan. ``dense="exact"`` keeps the exact scan everywhere.
"""

from .store import PostgresStore

__all__ = ["PostgresStore"]
