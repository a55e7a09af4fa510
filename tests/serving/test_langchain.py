"""The LangChain adapters, with the real langchain-core: a retriever and a chat message history."""

from __future__ import annotations

import pytest

pytest.importorskip("langchain_core", reason="the [langchain] extra is not installed")

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage  # noqa: E402

from diarist.adapters.langchain import DiaristChatMessageHistory, DiaristRetriever  # noqa: E402
from diarist.memory import Memory  # noqa: E402


@pytest.fixture
def memory(tmp_path):
    with Memory(tmp_path / "m.sqlite", embedder="hash") as mem:
        yield mem


def test_retriever_returns_dated_documents_best_first(memory):
    memory.add_session([{"role": "user", "content": "My cat Admon hides bones in the garden."}], app="me",
                       session_id="s1", date="2024-05-01")
    memory.add_fact("Alice is allergic to peanuts.", app="me", fact_id="f1", date="2024-05-02")
    retriever = DiaristRetriever(memory=memory, app="me", k=2)
    docs = retriever.invoke("Where does Admon hide bones?")
    assert docs[0].page_content.startswith("My cat Admon")
    assert docs[0].metadata["session_id"] == "s1" and docs[0].metadata["date"].startswith("2024-05-01")
    assert docs[0].metadata["ranks"]["lexical"] == 1
    assert DiaristRetriever(memory=memory, app="nobody").invoke("anything") == []


def test_chat_history_round_trip_is_searchable(memory):
    history = DiaristChatMessageHistory(memory, app="me", session_id="chat-1", date="2024-06-01")
    assert history.messages == []
    history.add_messages([SystemMessage("Be brief."), HumanMessage("I moved to Lisbon in March.")])
    history.add_ai_message("Lisbon is lovely in spring.")
    assert [type(m) for m in history.messages] == [SystemMessage, HumanMessage, AIMessage]
    assert history.messages[1].content == "I moved to Lisbon in March."
    hits = memory.search("Where did I move?", app="me", k=3)
    assert hits[0].session_id == "chat-1" and "Lisbon" in hits[0].text
    again = DiaristChatMessageHistory(memory, app="me", session_id="chat-1")
    assert len(again.messages) == 3  # another history object over the same session sees it all
    history.clear()
    assert history.messages == [] and memory.search("Lisbon", app="me", k=3) == []
