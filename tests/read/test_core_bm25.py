"""The lexical channel: pure BM25 functions, and parity of the stored index with bm25s on real text.

bm25s ("lucene" method) and diarist share Lucene's idf, ln(1 + (N - df + 0.5) / (df + 0.5)).
Two documented differences are made explicit rather than hidden:

- bm25s drops the constant (k1 + 1) numerator of the Robertson tf component (as Lucene >= 8
  does); diarist keeps the textbook form. The factor is the same for every term and document,
  so rankings are identical and diarist's score is exactly (k1 + 1) times bm25s'.
- bm25s scores a query token once per occurrence; diarist scores each distinct query term once.
  A fair comparison therefore feeds bm25s the unique query terms; a separate test shows the
  difference for a query with a repeated token.
"""

from __future__ import annotations

import math
import sqlite3

import numpy as np
import pytest

from diarist import lexical
from diarist.importers.locomo import locomo_sessions
from diarist.memory import Memory

bm25s = pytest.importorskip("bm25s")

QUERIES_EXTRA = [
    "Becoming Nicole book",
    "adoption agencies LGBTQ support group",
    "pottery class painting sunrise",
    "Oscar bone hide",
    "zzzunknownterm",  # not in the vocabulary: no document scores
    "Caroline Melanie",  # very common names: low idf
]


# -- pure functions -----------------------------------------------------------------------------


def test_analyze_normalises_casefolds_and_splits_on_non_letters():
    assert lexical.analyze("Hello, WORLD! it's 2024") == ["hello", "world", "s", "2024"]
    # NFKC: full-width letters and ligatures become plain ones; casefold: ß -> ss
    assert lexical.analyze("ＡＢＣ ﬁne Straße") == ["abc", "fine", "strass"]  # stemmed after folding
    # underscores and punctuation separate terms; accents and non-Latin scripts are kept
    assert lexical.analyze("snake_case café Ωmega 東京") == ["snake", "case", "café", "ωmega", "東京"]
    assert lexical.analyze("") == []


def test_analyze_stems_inflections_to_one_term():
    # Snowball English (Porter2): a question's "adopting" meets a memory's "adoption".
    assert lexical.analyze("painting paints painted") == ["paint"] * 3
    assert lexical.analyze("adoption adopted adopting") == ["adopt"] * 3
    assert lexical.analyze("Caroline's dogs") == ["carolin", "s", "dog"]
    # The same stem whether or not a word was stemmed before in this process (the cache).
    assert [lexical.stem(w) for w in ("running", "running", "runs")] == ["run"] * 3


def test_analyze_stems_the_same_in_every_thread():
    from concurrent.futures import ThreadPoolExecutor

    words = [f"walking{i} talked{i} happiness" for i in range(200)]
    with ThreadPoolExecutor(4) as pool:
        threaded = list(pool.map(lexical.analyze, words))
    assert threaded == [lexical.analyze(w) for w in words]


def test_analyze_stopwords():
    assert lexical.analyze("What is the name of my cat") == ["name", "cat"]
    assert lexical.analyze("What is the name", keep_stopwords=True) == ["what", "is", "the", "name"]
    assert all(w == w.casefold() for w in lexical.STOPWORDS)


def test_idf_is_lucene_and_never_negative():
    n = 100
    for df in (1, 10, 50, 99, 100):
        assert lexical.idf(n, df) == pytest.approx(math.log(1 + (n - df + 0.5) / (df + 0.5)))
        assert lexical.idf(n, df) > 0
    dfs = np.arange(1, n + 1)
    assert np.all(np.diff(lexical.idf(n, dfs)) < 0), "rarer terms weigh more"


def test_term_scores_formula_and_shape():
    k1, b, avgdl, term_idf = 1.5, 0.75, 10.0, 2.0
    tf = np.array([1, 2, 3, 1])
    dl = np.array([10, 10, 10, 40])
    got = lexical.term_scores(tf, dl, avgdl, term_idf, k1, b)
    want = [term_idf * t * (k1 + 1) / (t + k1 * (1 - b + b * d / avgdl)) for t, d in zip(tf, dl)]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert got[0] < got[1] < got[2] < term_idf * (k1 + 1), "tf saturates below idf * (k1 + 1)"
    assert got[3] < got[0], "a longer document scores lower for the same tf"
    # b = 0: no length normalisation
    flat = lexical.term_scores(np.array([2, 2]), np.array([5, 500]), avgdl, term_idf, k1, 0.0)
    assert flat[0] == pytest.approx(flat[1])
    # a document of average length: tf * (k1 + 1) / (tf + k1)
    assert lexical.term_scores(np.array([1]), np.array([10]), 10.0, 1.0, k1, b)[0] == pytest.approx((k1 + 1) / (1 + k1))


def test_defaults_are_the_literature_ones():
    assert (lexical.K1, lexical.B) == (1.5, 0.75)


# -- parity with bm25s on real LoCoMo text -------------------------------------------------------


@pytest.fixture(scope="module")
def locomo_index(tmp_path_factory, locomo):
    """All LoCoMo sessions (> 1,024 chunks, so postings span several blocks), ingested in three
    batches so that postings are appended to existing blocks."""
    path = tmp_path_factory.mktemp("bm25") / "locomo.sqlite"
    mem = Memory(path, embedder="hash")
    sessions = [s for record in locomo for s in locomo_sessions(record)]
    third = len(sessions) // 3
    for part in (sessions[:third], sessions[third : 2 * third], sessions[2 * third :]):
        mem.add_sessions(part, app="locomo")
    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT id, text FROM chunks WHERE in_lexical = 1 ORDER BY id").fetchall()
    conn.close()
    ids = [r[0] for r in rows]
    corpus = [lexical.analyze(r[1]) for r in rows]  # the same tokens on both sides
    questions = [q["question"] for record in locomo for q in record["qa"][:4]]
    yield mem, ids, corpus, questions + QUERIES_EXTRA
    mem.close()


def _reference(corpus, k1, b):
    ref = bm25s.BM25(k1=k1, b=b, method="lucene", dtype="float64")
    ref.index(corpus, show_progress=False)
    return ref


def _reference_scores(ref, terms: list[str], n: int) -> np.ndarray:
    known = [t for t in terms if t in ref.vocab_dict]
    if not known:
        return np.zeros(n)
    return np.asarray(ref.get_scores(known), dtype=np.float64)


@pytest.mark.parametrize("k1,b", [(1.5, 0.75), (1.2, 0.4)])
@pytest.mark.slow
def test_scores_match_bm25s(locomo_index, k1, b):
    mem, ids, corpus, queries = locomo_index
    assert len(ids) > 1024, "the corpus should span more than one postings block"
    ref = _reference(corpus, k1, b)
    checked = 0
    for query in queries:
        terms = sorted(set(lexical.analyze(query)))
        want = _reference_scores(ref, terms, len(ids)) * (k1 + 1)  # see the module docstring
        got_pairs = mem.lexical.search("locomo", lexical.analyze(query), len(ids), k1, b)
        got = np.zeros(len(ids))
        position = {cid: i for i, cid in enumerate(ids)}
        for cid, score in got_pairs:
            got[position[cid]] = score
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-6, err_msg=query)
        # the store returns exactly the documents with a positive score, best first
        assert len(got_pairs) == int((want > 0).sum()), query
        scores = [s for _, s in got_pairs]
        assert scores == sorted(scores, reverse=True)
        checked += bool(got_pairs)
    assert checked >= 20, "most queries should match something"


def test_top_ranking_matches_bm25s(locomo_index):
    mem, ids, corpus, queries = locomo_index
    ref = _reference(corpus, 1.5, 0.75)
    for query in queries[:12]:
        terms = sorted(set(lexical.analyze(query)))
        want = _reference_scores(ref, terms, len(ids))
        if not want.any():
            continue
        # ties broken by ascending chunk id, as the store does
        order = sorted((i for i in range(len(ids)) if want[i] > 0), key=lambda i: (-round(want[i], 9), ids[i]))[:10]
        got = mem.lexical.search("locomo", terms, 10, 1.5, 0.75)
        assert [cid for cid, _ in got] == [ids[i] for i in order], query


def test_repeated_query_tokens_are_scored_once(locomo_index):
    """bm25s adds a repeated token's contribution once per occurrence; diarist counts each distinct
    query term once (so "oscar oscar" is not twice as much evidence as "oscar")."""
    mem, ids, corpus, _ = locomo_index
    ref = _reference(corpus, 1.5, 0.75)
    once = mem.lexical.search("locomo", ["oscar", "bone"], len(ids), 1.5, 0.75)
    twice = mem.lexical.search("locomo", ["oscar", "oscar", "bone"], len(ids), 1.5, 0.75)
    assert once == twice and once
    ref_once = _reference_scores(ref, ["oscar", "bone"], len(ids))
    ref_twice = _reference_scores(ref, ["oscar", "oscar", "bone"], len(ids))
    ref_oscar = _reference_scores(ref, ["oscar"], len(ids))
    np.testing.assert_allclose(ref_twice, ref_once + ref_oscar, rtol=1e-9)
    position = {cid: i for i, cid in enumerate(ids)}
    np.testing.assert_allclose([s for _, s in once], [ref_once[position[c]] * 2.5 for c, _ in once], rtol=1e-9)


def test_stored_statistics_match_the_corpus(locomo_index):
    mem, ids, corpus, _ = locomo_index
    conn = sqlite3.connect(mem.store.path)
    n_docs, total_len, version = conn.execute("SELECT n_docs, total_len, version FROM lex_stats").fetchone()
    lengths = dict(conn.execute("SELECT id, lex_len FROM chunks").fetchall())
    conn.close()
    assert n_docs == len(corpus)
    assert total_len == sum(len(d) for d in corpus)
    assert version == lexical.VERSION
    assert [lengths[i] for i in ids] == [len(d) for d in corpus]
    assert mem.lexical.status("locomo") is None


def test_stopword_only_and_empty_queries(locomo_index):
    mem, *_ = locomo_index
    assert mem.lexical.search("locomo", [], 10, 1.5, 0.75) == []
    assert mem.lexical.search("locomo", lexical.analyze("what is the"), 10, 1.5, 0.75) == []
    assert mem.lexical.search("locomo", ["oscar"], 0, 1.5, 0.75) == []
    assert len(mem.lexical.search("locomo", ["oscar"], 2, 1.5, 0.75)) <= 2
