"""Chunking: fit the window by the embedder's own tokenizer, never cut a fenced code block,
never drop text; the four views (all, user, both, split)."""

from __future__ import annotations

import random
import sqlite3

import pytest

from diarist.errors import ConfigError

from diarist import lexical
from diarist.write.chunk import chunk_session, split_code_fences
from diarist.memory import Memory
from diarist.types import Message

from conftest import WORDS, sentence

CODE = "```python\n" + "\n".join(f"def f{i}(x):\n    return x * {i}  # step {i}" for i in range(12)) + "\n```"
MEDIUM = "```\n" + "\n".join(f"let v{i} = w{i};" for i in range(9)) + "\n```"  # about 30 tokens


def _words(text: str) -> list[str]:
    return [w for w in text.replace("```python", " ").replace("```", " ").split()]


def _long_session(rng: random.Random, n_turns: int = 12) -> list[Message]:
    out = []
    for t in range(n_turns):
        paragraphs = [" ".join(sentence(rng) for _ in range(rng.randint(1, 12))) for _ in range(rng.randint(1, 4))]
        if rng.random() < 0.3:
            paragraphs.insert(rng.randint(0, len(paragraphs)), rng.choice([CODE, MEDIUM, "```\nshort code\n```"]))
        out.append(Message("user" if t % 2 == 0 else "assistant", "\n\n".join(paragraphs)))
    return out


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("max_tokens", [None, 24])
def test_chunks_fit_the_window_keep_code_whole_and_drop_nothing(hash_embedder, seed, max_tokens):
    rng = random.Random(seed)
    messages = _long_session(rng)
    limit = max_tokens or hash_embedder.window
    chunks = chunk_session(messages, hash_embedder, "all", max_tokens)
    for c in chunks:
        n = hash_embedder.count_tokens(c.text)
        assert n == c.n_tokens
        if n > limit:
            assert c.text in (CODE, MEDIUM), "only a code block that alone exceeds the window may"
        # a fence opened in a chunk is closed in the same chunk
        assert c.text.count("```") % 2 == 0
        assert "let v0" not in c.text or MEDIUM in c.text
    # no word is lost or reordered
    assert _words("\n".join(c.text for c in chunks)) == _words("\n".join(m.content for m in messages))
    # chunk metadata: consecutive positions, turns in order, roles of the turns covered
    assert [c.position for c in chunks] == list(range(len(chunks)))
    for c in chunks:
        assert c.first_turn <= c.last_turn
        assert set(c.roles) == {messages[t].role for t in range(c.first_turn, c.last_turn + 1)}
    assert [c.first_turn for c in chunks] == sorted(c.first_turn for c in chunks)


def test_short_turns_are_packed_together(hash_embedder):
    messages = [Message("user", "one two three"), Message("assistant", "four five"), Message("user", "six")]
    (chunk,) = chunk_session(messages, hash_embedder, "all")
    assert chunk.text == "one two three\nfour five\nsix"
    assert (chunk.first_turn, chunk.last_turn, chunk.roles, chunk.n_tokens) == (0, 2, ("user", "assistant"), 6)


def test_long_prose_is_split_by_paragraph_then_sentence_then_tokens(hash_embedder):
    window = hash_embedder.window  # 64 words
    para = " ".join(f"w{i}" for i in range(40)) + "."
    chunks = chunk_session([Message("user", f"{para}\n\n{para}\n\n{para}")], hash_embedder, "all")
    assert [c.n_tokens for c in chunks] == [40, 40, 40]
    sentences = " ".join(f"Sentence {i} " + " ".join(f"x{i}_{j}" for j in range(20)) + "." for i in range(10))
    chunks = chunk_session([Message("user", sentences)], hash_embedder, "all")
    assert all(c.n_tokens <= window for c in chunks) and len(chunks) >= 4
    assert all(c.text.endswith(".") for c in chunks), "cut at sentence ends"
    run_on = " ".join(f"t{i}" for i in range(300))  # no sentence end at all
    chunks = chunk_session([Message("user", run_on)], hash_embedder, "all")
    assert [c.n_tokens for c in chunks] == [64, 64, 64, 64, 44]
    assert " ".join(c.text for c in chunks) == run_on


def test_oversize_code_block_stays_whole(hash_embedder):
    big = "```\n" + "\n".join(f"line_{i} = value_{i} + other_{i}" for i in range(60)) + "\n```"
    assert hash_embedder.count_tokens(big) > hash_embedder.window
    text = "Look at this.\n\n" + big + "\n\nIt ends with a zorblax."
    chunks = chunk_session([Message("assistant", text)], hash_embedder, "all")
    assert big in [c.text for c in chunks]
    assert chunks[-1].text.endswith("zorblax.")


def test_oversize_code_block_is_stored_and_found_whole(tmp_path):
    big = "```\n" + "\n".join(f"line_{i} = value_{i}" for i in range(80)) + "\nfinal_marker_qwerty = 1\n```"
    with Memory(tmp_path / "m.sqlite", embedder="hash") as mem:
        mem.add_session([{"role": "user", "content": "Here:\n\n" + big + "\n\nthanks"}], app="a", session_id="code")
        # The hash test embedder's vectors are noise: the block is what BM25 finds first.
        hits = mem.search("qwerty", app="a", k=3)
        found = mem.derive(group=False).search("qwerty", app="a", k=3)
        found = [h for h in found if h.ranks["lexical"] == 1]
        assert found and found[0].text == big, "the block is one chunk, not truncated"
        assert big in hits[0].passages  # and one passage of its memory


def test_split_code_fences():
    text = "intro\n```py\na = 1\n\nb = 2\n```\nmiddle\n~~~\nx\n~~~\nend"
    assert split_code_fences(text) == [
        ("intro\n", False),
        ("```py\na = 1\n\nb = 2\n```", True),
        ("\nmiddle\n", False),
        ("~~~\nx\n~~~", True),
        ("\nend", False),
    ]
    # an unclosed fence runs to the end; a ``` inside a ~~~ block does not close it
    assert split_code_fences("a\n```\nopen code") == [("a\n", False), ("```\nopen code", True)]
    assert split_code_fences("~~~\n```\nstill\n~~~\nafter") == [("~~~\n```\nstill\n~~~", True), ("\nafter", False)]
    assert split_code_fences("no fences") == [("no fences", False)]


def test_blank_turns_are_skipped(hash_embedder):
    chunks = chunk_session([Message("user", "  "), Message("assistant", "real words")], hash_embedder, "all")
    assert [(c.text, c.first_turn) for c in chunks] == [("real words", 1)]


# -- views -----------------------------------------------------------------------------------

CONVERSATION = [
    Message("user", "My sister Ilse lives in Graz."),
    Message("assistant", "Graz is lovely; the Schlossberg clocktower is famous."),
    Message("user", "She works as a luthier."),
]


def test_views(hash_embedder):
    all_ = chunk_session(CONVERSATION, hash_embedder, "all")
    assert [(c.view, c.roles, c.dense, c.lexical) for c in all_] == [("all", ("user", "assistant"), True, True)]
    user = chunk_session(CONVERSATION, hash_embedder, "user")
    assert [(c.view, c.roles, c.dense, c.lexical) for c in user] == [("user", ("user",), True, True)]
    assert "Schlossberg" not in user[0].text and "luthier" in user[0].text
    both = chunk_session(CONVERSATION, hash_embedder, "both")
    assert [(c.view, c.position, c.dense, c.lexical) for c in both] == [("all", 0, True, True), ("user", 1, True, True)]
    split = chunk_session(CONVERSATION, hash_embedder, "split")
    # One chunk of every turn, in both channels; its vector reads only the user's words.
    assert [(c.view, c.dense, c.lexical) for c in split] == [("all", True, True)]
    assert split[0].text == all_[0].text
    assert split[0].dense_text == "My sister Ilse lives in Graz.\nShe works as a luthier."
    assistant_only = chunk_session([Message("assistant", "Welcome back!")], hash_embedder, "split")
    assert [(c.dense, c.lexical, c.embed_text) for c in assistant_only] == [(False, True, None)]
    with pytest.raises(ConfigError, match="unknown index plan"):
        chunk_session(CONVERSATION, hash_embedder, "assistant")
    with pytest.raises(ConfigError, match="unknown index plan"):
        Memory(":memory:", embedder="hash", plan="nope")


@pytest.mark.parametrize("view", ["all", "user", "both", "split", "split-apart"])
def test_views_in_the_store(tmp_path, view):
    with Memory(tmp_path / f"{view}.sqlite", embedder="hash", plan=view) as mem:
        mem.add_session([{"role": m.role, "content": m.content} for m in CONVERSATION], app="a", session_id="s")
        conn = sqlite3.connect(mem.store.path)
        rows = conn.execute("SELECT id, view, vector IS NOT NULL, in_lexical FROM chunks ORDER BY id").fetchall()
        conn.close()
        dense_ids = {r[0] for r in rows if r[2]}
        lexical_ids = {r[0] for r in rows if r[3]}
        assert {c for c, _ in mem.dense.search("a", mem.embedder.embed(["Graz"]), 100)} == dense_ids
        found = {c for c, _ in mem.lexical.search("a", ["graz", "luthier", "schlossberg"], 100, 1.5, 0.75)}
        assert found == lexical_ids
        assistant_word = mem.lexical.search("a", ["schlossberg"], 100, 1.5, 0.75)
        views = {r[0]: r[1] for r in rows}
        if view == "user":
            assert assistant_word == []  # user turns only
        else:
            assert [views[c] for c, _ in assistant_word] == ["all"]
        expect = {"all": {"all"}, "user": {"user"}, "both": {"all", "user"}, "split": {"all"},
                  "split-apart": {"user"}}[view]
        assert {views[c] for c in dense_ids} == expect
        assert mem.lexical.status("a") is None
        hits = mem.search("Ilse Graz luthier", app="a", k=10)
        assert hits and all(h.session_id == "s" for h in hits) and not hits.notes


def test_memory_chunk_tokens_is_honoured(tmp_path):
    rng = random.Random(1)
    text = " ".join(rng.choice(WORDS) for _ in range(200))
    with Memory(tmp_path / "m.sqlite", embedder="hash", chunk_tokens=20) as mem:
        mem.add_session([{"role": "user", "content": text}], app="a")
        conn = sqlite3.connect(mem.store.path)
        lengths = [r[0] for r in conn.execute("SELECT n_tokens FROM chunks ORDER BY id")]
        conn.close()
    assert lengths == [20] * 10
    assert sum(len(lexical.analyze(w, keep_stopwords=True)) for w in text.split()) == 200


def test_system_and_tool_turns_are_kept_but_not_indexed_unless_the_plan_says(hash_embedder):
    chat = [Message("system", "You are Zorblax, a helpful assistant."), Message("user", "My cat is Admon."),
            Message("tool", "lookup returned: quokka"), Message("assistant", "Admon is a fine name.")]
    default = chunk_session(chat, hash_embedder, "split")
    assert "Zorblax" not in " ".join(c.text for c in default) and "quokka" not in " ".join(c.text for c in default)
    everything = chunk_session(chat, hash_embedder, "split-all-roles")
    assert "Zorblax" in everything[0].text and "quokka" in everything[0].text
    assert everything[0].dense_text == "My cat is Admon."  # the vector still reads the user's words only
    with Memory(":memory:", embedder="hash") as mem:
        mem.add_session([m.__dict__ for m in chat], app="a", session_id="s")
        assert len(mem.get("s", app="a")["messages"]) == 4  # stored verbatim, all of it
        assert all("Zorblax" not in h.text for h in mem.search("Zorblax", app="a"))
