"""The read path as named stages over one parsed question: the trace, explain, memories not
chunks, the cut, and the block's marks (issue 26)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import diarist.read.question as question_module
from diarist.context import build_context
from diarist.errors import InvalidInput
from diarist.memory import Memory
from diarist.read.cut import CutParams, ItemSignals, cut
from diarist.read.question import Question
from diarist.read.trace import Trace
from diarist.types import Hit

SRC = Path(__file__).resolve().parents[2] / "src" / "diarist"


def _imports(folder: Path) -> set[str]:
    """The modules a package's files import (relative imports resolved to diarist.*)."""
    out = set()
    for path in folder.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = ["diarist", folder.name][: 3 - node.level]
                    out.add(".".join(base + ([node.module] if node.module else [])))
                else:
                    out.add(node.module or "")
            elif isinstance(node, ast.Import):
                out.update(alias.name for alias in node.names)
    return out


def test_read_does_not_import_rerank():
    """The circle read <-> rerank is gone: rerank builds on read, read knows a reranker only by
    the protocol it calls (``rerank_question``)."""
    assert not any(name.startswith("diarist.rerank") for name in _imports(SRC / "read"))
    assert any(name.startswith("diarist.read") for name in _imports(SRC / "rerank"))


@pytest.fixture()
def notes():
    m = Memory(":memory:", embedder="hash", reranker="evidence:names,time")
    m.add_session([{"role": "user", "content": "Caroline painted a sunrise over the harbor in May."},
                   {"role": "assistant", "content": "A sunrise over the harbor sounds lovely, Caroline."},
                   {"role": "user", "content": "The harbor painting went to the gallery."}],
                  app="me", session_id="s-paint", date="2024-05-20")
    m.add_fact("The user moved to Lisbon in March.", app="me", fact_id="f-move", date="2024-03-10")
    m.add_fact("Caroline's gallery opens in June.", app="me", fact_id="f-gallery", date="2024-06-01")
    yield m
    m.close()


def test_the_question_is_parsed_once_per_search(notes, monkeypatch):
    calls = {"names": 0, "time": 0}
    real_names, real_time = question_module.proper_nouns, question_module.resolve_time

    def names(text):
        calls["names"] += 1
        return real_names(text)

    def time(text, now):
        calls["time"] += 1
        return real_time(text, now)

    monkeypatch.setattr(question_module, "proper_nouns", names)
    monkeypatch.setattr(question_module, "resolve_time", time)
    notes.search("What did Caroline paint in May?", app="me", k=3, now="2024-07-01")
    assert calls == {"names": 1, "time": 1}


def test_every_stage_records_what_it_decided(notes):
    results = notes.search("What did Caroline paint?", app="me", k=2)
    assert [r.stage for r in results.trace] == ["channels", "fusion", "fetch", "second-stage", "group"]
    assert results.trace[-1].kept >= len(results) and results.dropped == []  # dropped: only when explaining
    assert all(hit.why is None for hit in results)
    block = notes.context("What did Caroline paint?", app="me", budget_tokens=400)
    assert [r.stage for r in block.trace][-1] == "budget"
    dated = notes.context("What did Caroline paint in May?", app="me", now="2024-07-01", explain=True)
    assert all(s.hit.why["second_stage"]["signals"]["time_span"] == "in may" for s in dated.snippets)


def test_explain_says_why_each_hit_was_recalled(notes):
    results = notes.search("What did Caroline paint?", app="me", k=2, explain=True, now="2024-07-01")
    assert results.explained
    for place, hit in enumerate(results, 1):
        why = hit.why
        assert why["channels"]["dense"] == {"rank": hit.ranks["dense"], "score": hit.scores["dense"]}
        assert why["channels"]["lexical"] == {"rank": hit.ranks["lexical"], "score": hit.scores["lexical"]}
        assert why["fused"] == hit.score and why["passages"] == hit.passages
        assert why["second_stage"]["after"] == place and why["second_stage"]["before"] >= 1
    first = results[0]
    painting = next(hit for hit in results if hit.id == "s-paint")
    assert "Caroline" in painting.why["matched_terms"]
    assert "painted" in painting.why["matched_terms"]  # matched by stem, shown as written
    # One memory was asked less than the three: the third was left out, and the trace says so.
    assert any(d.stage == "k" and d.id for d in results.dropped)
    as_dict = results.to_dict()
    assert set(as_dict) == {"hits", "notes", "trace", "dropped"} and as_dict["hits"][0]["why"] == first.why


def test_the_floor_records_what_it_dropped():
    with Memory(":memory:", embedder="hash", floor=0.99) as m:
        m.add_fact("The user's cat is called Admon.", app="me", fact_id="f-cat")
        results = m.search("volcano physics", app="me", k=3, explain=True)
        assert list(results) == []
        assert [r.stage for r in results.trace] == ["channels", "floor"]
        assert results.trace[-1].kept == 0 and "under the floor" in results.trace[-1].note
        assert [d.stage for d in results.dropped] == ["floor"]


def test_a_memory_is_one_hit_with_its_passages_in_order_and_k_counts_memories():
    with Memory(":memory:", embedder="hash", chunk_tokens=16, reranker=None) as m:
        turns = [f"Lantern harbor note {i}: the lantern by the harbor was lit on day {i}." for i in range(6)]
        m.add_session([{"role": "user", "content": t} for t in turns], app="me", session_id="s-long")
        m.add_fact("The harbor lantern is red.", app="me", fact_id="f-red")
        m.add_fact("The garden gate is green.", app="me", fact_id="f-gate")
        chunks = m.derive(group=False).search("lantern harbor", app="me", k=3)
        assert [h.session_id for h in chunks].count("s-long") >= 2  # one conversation fills slots
        hits = m.search("lantern harbor", app="me", k=3, explain=True)
        ids = [h.id for h in hits]
        assert len(ids) == len(set(ids)) == 3 and "s-long" in ids
        long = hits[ids.index("s-long")]
        assert 1 < len(long.passages) <= 3
        positions = [turns.index(p.split("\n")[0]) if p in turns else min(i for i, t in enumerate(turns) if t in p)
                     for p in long.passages]
        assert positions == sorted(positions)  # original order, not rank order
        assert long.text == "\n…\n".join(long.passages)


def test_a_note_is_titled_by_the_note_not_a_section_heading():
    metadata = {"source": "markdown", "path": "recipes/Grandma's soup.md", "title": "Ingredients"}
    hit = Hit(chunk_id=1, text="## Ingredients\nLeeks", score=1.0, session_id="recipes/Grandma's soup.md",
              fact_id=None, date=None, roles=("user",), view="all", metadata=metadata)
    assert hit.title == "Grandma's soup"
    with_front = dict(metadata, front_matter={"title": "Soup of the house"})
    assert Hit(**{**hit.__dict__, "metadata": with_front}).title == "Soup of the house"
    chat = dict(metadata, source="chatgpt", title="Python paths")
    assert Hit(**{**hit.__dict__, "metadata": chat}).title == "Python paths"


def test_the_cut_reads_meaning_and_words_not_the_share_of_the_best():
    params = CutParams(min_cosine=0.10, max_gap=0.40, min_coverage=0.5)
    items = [ItemSignals(0.15, 0.0),  # the best memory always stays
             ItemSignals(0.013, 0.0),  # unrelated: near-zero cosine, no word of the question
             ItemSignals(0.02, 0.5),  # carried by words
             ItemSignals(None, 0.0),  # no vector and no word
             ItemSignals(0.60, 0.0)]  # carried by meaning
    verdicts = cut(items, params)
    assert verdicts[0] is None and verdicts[2] is None and verdicts[4] is None
    assert "cosine 0.013 under 0.1" in verdicts[1] and "no vector" in verdicts[3]
    far = cut([ItemSignals(0.70, 0.0), ItemSignals(0.20, 0.25)], params)
    assert far[1] is not None and "under the best" in far[1]


def _fact_hit(fact_id: str, text: str, date: str, score: float, **metadata) -> Hit:
    return Hit(chunk_id=hash(fact_id) % 1000, text=text, score=score, session_id=None, fact_id=fact_id, date=date,
               roles=("fact",), view="fact", metadata=metadata)


def test_the_block_marks_the_older_of_two_memories_on_one_subject_and_superseded_ones():
    older = _fact_hit("f-bikes", "The user owns two bikes.", "2023-01-05", 0.9)
    newer = _fact_hit("f-sold", "The user sold one of the bikes; one bike left.", "2024-02-01", 0.8)
    other = _fact_hit("f-cat", "The cat is called Admon.", "2023-06-01", 0.7, superseded_by="f-cat2")
    terms = Question("How many bikes do I own?").own_terms
    block = build_context([older, newer, other], lambda text: len(text.split()), budget_tokens=400, terms=terms,
                          trace=Trace(), trim=None)
    assert block.index("[1] 2023-01-05 · note f-bikes · earlier than [3]") >= 0
    assert "[3] 2024-02-01 · note f-sold\n" in block
    assert "[2] 2023-06-01 · note f-cat · superseded by f-cat2\n" in block  # no bike: not marked earlier
    assert [s.earlier_than for s in block.snippets] == [3, None, None]
    assert block.trace[-1].stage == "budget" and block.to_dict()["snippets"][0]["earlier_than"] == 3


def _session(session_id: str, score: float, passages: list[str], ranks: list[int]) -> Hit:
    return Hit(chunk_id=len(session_id), text="\n…\n".join(passages), score=score, session_id=session_id,
               fact_id=None, date="2024-01-01", roles=("user",), view="all", passages=passages, passage_ranks=ranks)


def test_the_budget_is_filled_in_passes_over_passage_rank():
    """The best passage of every memory first, then second bests: two memories both fit by
    their best passages where the first one whole would crowd the second out."""
    first = _session("s1", 0.9, ["filler " * 60, "The user's bike is blue.", "more filler " * 30], [1, 2, 0])
    second = _session("s2", 0.8, ["The user rides it on Sundays.", "an aside " * 40], [0, 1])
    words = lambda text: len(text.split())  # noqa: E731
    block = build_context([first, second], words, budget_tokens=140, trace=Trace())
    shown = {s.hit.id: s for s in block.snippets}
    assert set(shown) == {"s1", "s2"} and block.n_tokens <= 140
    assert "The user's bike is blue." in shown["s1"].text and "more filler" in shown["s1"].text  # 1st and 2nd best
    assert "filler filler" not in shown["s1"].text.split("more filler")[0]  # its third-best passage left out
    assert shown["s1"].text.index("bike is blue") < shown["s1"].text.index("more filler")  # original order
    assert "an aside" not in shown["s2"].text
    assert "shown by some of their passages" in block.trace[-1].note
    whole = build_context([first, second], words, budget_tokens=400, trace=Trace())
    assert all(s.text.endswith(s.hit.text.strip()) for s in whole.snippets)  # room for all: whole


def test_the_budget_notes_count_one_memory_as_one():
    """The trace and notes are read by people: one memory is "1 memory ... its", one hit left
    out "1 hit ... was" (they said "1 memories", "1 hits")."""
    words = lambda text: len(text.split())  # noqa: E731
    long = _session("s1", 0.9, ["The user's bike is blue.", "filler " * 80], [0, 1])
    block = build_context([long], words, budget_tokens=70, trace=Trace())
    assert block.trace[-1].note.endswith("; 1 memory shown by some of its passages")
    crowded = _session("s2", 0.8, ["an aside " * 60], [0])
    block = build_context([_session("s1", 0.9, ["The user's bike is blue."], [0]), crowded], words,
                          budget_tokens=70, trace=Trace())
    assert "1 hit did not fit the budget of 70 tokens and was left out" in block.notes


def test_explain_over_http_and_the_cli(tmp_path):
    from click.testing import CliRunner
    from fastapi.testclient import TestClient

    from diarist.cli import main
    from diarist.keys import KeyStore
    from diarist.server.app import create_app

    db = tmp_path / "m.sqlite"
    with Memory(db, embedder="hash") as m:
        m.add_fact("The user's cat Admon is allergic to chicken.", app="me", fact_id="f-allergy")
        m.add_fact("The user moved to Lisbon in March.", app="me", fact_id="f-move")
    out = CliRunner().invoke(main, ["search", "cat allergic", "--db", str(db), "--app", "me", "--embedder", "hash",
                                    "--explain"])
    assert out.exit_code == 0, out.output
    assert "why: dense #1" in out.output and "matched: cat, allergic" in out.output and "stages:" in out.output
    with Memory(db, embedder="hash") as m:
        key = KeyStore(m.store).create("me")[0]
        client = TestClient(create_app(m), headers={"Authorization": f"Bearer {key}"})
        body = client.post("/v1/apps/me/search", json={"query": "cat allergic", "k": 1, "explain": True}).json()
        assert body["hits"][0]["why"]["matched_terms"] and body["trace"][0]["stage"] == "channels"
        assert body["dropped"] and body["dropped"][0]["stage"] == "k"
        plain = client.post("/v1/apps/me/search", json={"query": "cat allergic", "k": 1}).json()
        assert plain["hits"][0]["why"] is None and plain["dropped"] == []


CODING = [
    [{"role": "user", "content": "My pytest fixtures are slow because each test opens a new database connection. "
                                 "How can I share one connection across a module?"},
     {"role": "assistant", "content": "Give the fixture scope='module' and yield the connection; close it after "
                                      "the yield. Tests in the module then share it."}],
    [{"role": "user", "content": "Why does git say my branch has diverged after I rebased onto main?"},
     {"role": "assistant", "content": "Rebasing rewrote your commits, so the remote branch still has the old ones. "
                                      "Push with --force-with-lease to replace them safely."}],
    [{"role": "user", "content": "What's the advantage of pathlib Path over plain strings for file paths in Python?"},
     {"role": "assistant", "content": "Path objects join with /, know their suffix and parent, and work on every "
                                      "platform without os.path calls."}],
]


def test_porto_the_fact_first_and_unrelated_conversations_out_of_the_block():
    """The case of issue 26: three coding conversations and one short fact; "Where do I live?"
    gets the fact, first, and none of the conversations (the share-of-best cut kept all four)."""
    with Memory(":memory:") as m:
        for i, messages in enumerate(CODING):
            m.add_session(messages, app="me", session_id=f"code-{i}", date=f"2025-0{i + 3}-02")
        m.add_fact("The user moved to Porto in June 2025.", app="me", fact_id="f-porto", date="2025-06-20")
        hits = m.search("Where do I live?", app="me", k=4)
        assert hits[0].id == "f-porto"
        block = m.context("Where do I live?", app="me", explain=True)
        assert [s.hit.id for s in block.snippets] == ["f-porto"]
        assert "Porto" in block and "pytest" not in block and "pathlib" not in block
        assert {d.id for d in block.dropped if d.stage == "cut"} == {"code-0", "code-1", "code-2"}
        before = m.derive(group=False, cut=None).context("Where do I live?", app="me", relative_cut=0.65, trim=None)
        assert len(before.snippets) == 4  # the cut it replaces kept everything


def test_matched_terms_are_every_word_the_analyzer_matches():
    """The fast scan (only words opening like a term are stemmed) finds what stemming every
    word finds, the Snowball special cases included ("dying" -> "die", "early" -> "earli")."""
    import re
    import unicodedata

    from diarist.lexical import stem
    from diarist.read.explain import matched_terms

    text = ("Dying plants, early mornings and HAPPILY painted Galleries; the gallery's painter was "
            "happy. Skis, news, idly cycling, naïve café owners, Straße 2024 and x_y.")
    question = Question("Which dies early? Happy painters, galleries, ski news, idle cycle, naive cafe, strasse, 2024, x")
    wanted, reference = set(question.terms), {}
    for word in re.findall(r"[^\W_]+", unicodedata.normalize("NFKC", text)):
        reference.setdefault(stem(word.casefold()), word) if stem(word.casefold()) in wanted else None
    assert matched_terms(text, question) == list(reference.values())
    assert {"Dying", "early", "happy", "Galleries", "Skis", "news"} <= set(matched_terms(text, question))


def test_one_list_of_stage_names_for_the_registry_and_the_trace_and_each_record_is_timed():
    """The block's stages (cut, trim, budget) are read stages like the others: registered under
    the names the trace records, in the order of the one list, each record with its time."""
    from diarist.read.search import STAGES
    from diarist.read.trace import STAGE_NAMES

    assert list(STAGES)[: len(STAGE_NAMES)] == list(STAGE_NAMES)
    assert STAGE_NAMES[-3:] == ("cut", "trim", "budget")
    with Memory(":memory:") as m:
        m.add_session([{"role": "user", "content": "My cat Miso hid under the porch all afternoon."},
                       {"role": "assistant", "content": "Cats hide when something new scares them."}],
                      app="me", session_id="s1", date="2025-05-01")
        m.add_fact("The user moved to Porto in June 2025.", app="me", fact_id="f1", date="2025-06-20")
        block = m.context("Where did my cat hide?", app="me")
        names = [r.stage for r in block.trace]
        assert names == [n for n in STAGE_NAMES if n in names] and names[-3:] == ["cut", "trim", "budget"]
        assert all(isinstance(r.ms, float) and r.ms >= 0 for r in block.trace)
        assert all("ms" in r for r in block.to_dict()["trace"])
        # the block's own stages refuse to run in a search that builds no block
        with pytest.raises(InvalidInput, match="budget stage builds a context block"):
            m.search("Where did my cat hide?", app="me", after=["budget"])


def test_the_http_route_reads_a_chat_as_with_context_does():
    """server/routes/context.py asks ``question_of`` (diarist.chat), not a copy of it: a text
    part list and a follow-up give the same question and previous turn as Memory.with_context."""
    from diarist.chat import question_of

    messages = [{"role": "system", "content": "Be brief."}, {"role": "assistant", "content": "Hello!"},
                {"role": "user", "content": [{"type": "text", "text": "Where do I live?"}]}]
    assert question_of(messages) == ("Where do I live?", "Hello!")
    source = (Path(__file__).resolve().parents[2] / "src" / "diarist" / "server" / "routes" / "context.py").read_text()
    assert "question_of(messages)" in source and "def _text" not in source
