"""Bad arguments to derive(), Memory(), backup() and the key store raise vestige's own errors.

Finding this guards (the old build, e0b9e37): 566 of 5,249 fuzzed calls raised exceptions that
are not vestige's: derive(k1='0') a numpy UFuncTypeError at search time, derive(reranker=5) an
AttributeError, backup() with a NUL byte, an unencodable or a too long name a ValueError,
UnicodeEncodeError or OSError, keys.revoke of a huge id an OverflowError.
"""

from __future__ import annotations

import pytest

from vestige.errors import VestigeError
from vestige.memory import Memory


@pytest.fixture()
def memory(tmp_path):
    m = Memory(tmp_path / "m.sqlite", embedder="hash")
    m.add_fact("The user's cat is called Admon.", app="a")
    yield m
    m.close()


@pytest.mark.parametrize("options", [
    {"k1": "0"}, {"b": "x"}, {"b": 5.0}, {"k1": float("nan")}, {"depth": "10"}, {"depth": -1}, {"depth": 2**70},
    {"rrf_k": 1.5}, {"rerank_depth": None}, {"lexical_fusion": "yes"}, {"reranker": 5}, {"reranker": object()},
])
def test_derive_refuses_bad_options_before_searching(memory, options):
    with pytest.raises(VestigeError):
        memory.derive(**options).search("cat", app="a")


@pytest.mark.parametrize("options", [{"k1": "0"}, {"depth": "10"}, {"b": -1}, {"lexical_fusion": 1}])
def test_memory_refuses_bad_options(tmp_path, options):
    with pytest.raises(VestigeError):
        Memory(tmp_path / "m.sqlite", embedder="hash", **options)


@pytest.mark.parametrize("dest", ["a\x00b", "x" * 300, "\udcff-surrogate", 5])
def test_backup_refuses_bad_paths(memory, tmp_path, dest):
    if isinstance(dest, str) and dest[0] != "a":
        dest = str(tmp_path / dest)
    with pytest.raises(VestigeError):
        memory.backup(dest)


@pytest.mark.parametrize("value", ["9" * 40, "1" * 19, "٣"])
def test_keys_revoke_of_an_impossible_id_is_not_found(memory, value):
    with pytest.raises(VestigeError):
        memory.keys.revoke(value)


def test_good_options_still_work(memory, tmp_path):
    hits = memory.derive(k1=1.2, b=0.75, depth=50, rrf_k=60, lexical_fusion=True, reranker=None).search("cat", app="a")
    assert hits and "Admon" in hits[0].text
    memory.backup(tmp_path / "copy.sqlite")
    assert (tmp_path / "copy.sqlite").exists()
