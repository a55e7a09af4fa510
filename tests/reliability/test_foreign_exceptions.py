"""Bad arguments to derive(), Memory(), backup() and the key store raise diarist's own errors.

Finding this guards (the old build, e0b9e37): 566 of 5,249 fuzzed calls raised exceptions that
are not diarist's: derive(k1='0') a numpy UFuncTypeError at search time, derive(reranker=5) an
AttributeError, backup() with a NUL byte, an unencodable or a too long name a ValueError,
UnicodeEncodeError or OSError, keys.revoke of a huge id an OverflowError.
"""

from __future__ import annotations

import os

import pytest

from diarist.errors import DiaristError
from diarist.memory import Memory


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
    with pytest.raises(DiaristError):
        memory.derive(**options).search("cat", app="a")


@pytest.mark.parametrize("options", [{"k1": "0"}, {"depth": "10"}, {"b": -1}, {"lexical_fusion": 1}])
def test_memory_refuses_bad_options(tmp_path, options):
    with pytest.raises(DiaristError):
        Memory(tmp_path / "m.sqlite", embedder="hash", **options)


@pytest.mark.parametrize("dest", ["a\x00b", "x" * 300, "\udcff-surrogate", 5])
def test_backup_refuses_bad_paths(memory, tmp_path, dest):
    if isinstance(dest, str) and dest[0] != "a":
        dest = str(tmp_path / dest)
    with pytest.raises(DiaristError):
        memory.backup(dest)


@pytest.mark.parametrize("value", ["9" * 40, "1" * 19, "٣"])
def test_keys_revoke_of_an_impossible_id_is_not_found(memory, value):
    with pytest.raises(DiaristError):
        memory.keys.revoke(value)


def test_good_options_still_work(memory, tmp_path):
    hits = memory.derive(k1=1.2, b=0.75, depth=50, rrf_k=60, lexical_fusion=True, reranker=None).search("cat", app="a")
    assert hits and "Admon" in hits[0].text
    memory.backup(tmp_path / "copy.sqlite")
    assert (tmp_path / "copy.sqlite").exists()


# Found by the fuzz of Memory(...) and the key store (tests/reliability/test_fuzz_api.py): a 5,000-digit int
# in an error message (repr raised ValueError), a key that is not text (AttributeError), an
# embedding cache path that is a folder, a FIFO or holds a NUL (sqlite3 errors, ValueError).
HUGE = 10**5000


@pytest.mark.parametrize("options", [{"fusion": HUGE}, {"dense_weight": HUGE}], ids=["fusion", "dense_weight"])
def test_derive_refuses_a_huge_number_by_name(memory, options):
    with pytest.raises(DiaristError):
        memory.derive(**options).search("cat", app="a")


@pytest.mark.parametrize("options", [
    {"plan": HUGE}, {"dense": HUGE}, {"group": HUGE}, {"cut": HUGE}, {"embed_cache": "."},
    {"embed_cache": "fifo"}, {"embed_cache": "a\x00b"}, {"embed_cache": 5}, {"location": HUGE},
    {"location": "~no-such-user-here/m.sqlite"},
], ids=lambda options: "-".join(f"{k}={v!r:.20}" if not isinstance(v, int) else k for k, v in options.items()))
def test_memory_refuses_bad_options_found_by_the_fuzz(tmp_path, monkeypatch, options):
    monkeypatch.chdir(tmp_path)
    os.mkfifo("fifo")
    location = options.pop("location", tmp_path / "m.sqlite")
    with pytest.raises(DiaristError):
        Memory(location, embedder="hash", **options)


@pytest.mark.parametrize("key", [("a",), b"vst_x", 5, HUGE], ids=["tuple", "bytes", "int", "huge-int"])
def test_keys_check_of_a_key_that_is_not_text_is_refused(memory, key):
    with pytest.raises(DiaristError):
        memory.keys.check(key, HUGE)
    with pytest.raises(DiaristError):
        memory.keys.revoke(key)
