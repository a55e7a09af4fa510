"""The store contract on PostgreSQL + pgvector: ``open_store("postgresql://user@host/db")``.

Needs the ``postgres`` extra (``pip install 'vestige[postgres]'``: psycopg 3 and psycopg-pool)
and a server with pgvector (``CREATE EXTENSION vector`` is run when the user may; otherwise the
error says what to run). The tables live in the connection's current schema: add
``?options=-csearch_path%3Dname`` to the URL to keep a memory in its own schema.

Layout (``migrations.py``): the tables of the SQLite store, with the same meaning. Chunks keep
their vector twice: ``vector_i8`` (bytea, the normalised int8 bytes that ``read_vectors``
returns, so the shared exact index ranks exactly as on SQLite) and ``embedding`` (pgvector
``vector``, the same int8 values as floats: cosine over it orders as the exact channel does).
The BM25 index has SQLite's shape: the ``lex_terms`` dictionary shared by every app, posting
blocks as bytea keyed (app_id, term_id, block), chunk lengths, per-app ``lex_stats``, written
through ``vestige.lexical.postings`` inside the write transaction.

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

Dense search in SQL (later): the exact channel reads every vector of an app into memory. The
HNSW path will need: an index per dimension, as ``embedding`` has none fixed, e.g.
``CREATE INDEX ... USING hnsw ((embedding::vector(384)) vector_cosine_ops) WHERE ...`` (or a
typed column once ``meta.dim`` is claimed), with the app filter as a partial index per large app
or pgvector 0.8's iterative scans (``SET hnsw.iterative_scan = relaxed_order`` and
``hnsw.ef_search`` above the depth) so that ``WHERE app_id = ...`` still fills the depth; a
``DenseIndex`` that orders by ``embedding <=> query`` (the query as int8-rounded or float
values), returns 1 - distance as the cosine, and re-ranks its candidates exactly from
``vector_i8`` so scores stay those of the exact channel; and a rule for when to use it (apps
above some size), as HNSW is approximate and rankings would otherwise differ from SQLite's.
"""

from .store import PostgresStore

__all__ = ["PostgresStore"]
