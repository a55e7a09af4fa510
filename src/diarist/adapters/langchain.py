"""LangChain adapters (``pip install 'diarist[langchain]'``): a retriever and a chat history.

- ``DiaristRetriever``: ``retriever.invoke("question")`` returns ``Document``s, best first, each
  with its date, ids and per-channel ranks in ``metadata``.
- ``DiaristChatMessageHistory``: one diarist session as a LangChain chat history; every
  message added is appended atomically (``Memory.append_messages``) and indexed at once.

Both take a ``Memory`` and an app; nothing here reads the environment.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import MissingDependency, NotFound
from ..memory import Memory

try:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.chat_history import BaseChatMessageHistory
    from langchain_core.documents import Document
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
    from langchain_core.retrievers import BaseRetriever
    from pydantic import ConfigDict
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingDependency("the LangChain adapters need langchain-core: pip install 'diarist[langchain]'") from exc

#: LangChain message type -> diarist role, and back.
_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}
_CLASSES = {"user": HumanMessage, "assistant": AIMessage, "system": SystemMessage}


class DiaristRetriever(BaseRetriever):
    """Retrieves from one app of a diarist memory (the default second stage included)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Memory
    app: str
    k: int = 5

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        if self.app not in self.memory.apps():
            return []
        return [
            Document(
                page_content=hit.text,
                metadata={
                    "id": hit.fact_id or hit.session_id, "session_id": hit.session_id, "fact_id": hit.fact_id,
                    "date": hit.date, "score": hit.score, "ranks": dict(hit.ranks), "app": self.app,
                },
            )
            for hit in self.memory.search(query, app=self.app, k=self.k)
        ]


def _to_langchain(message: dict[str, Any]) -> BaseMessage:
    if message["role"] == "tool":
        return ToolMessage(content=message["content"], tool_call_id="diarist")  # the call id is not kept
    return _CLASSES[message["role"]](content=message["content"])


def _to_diarist(message: BaseMessage) -> dict[str, Any]:
    role = _ROLES.get(message.type)
    if role is None:
        raise ValueError(f"diarist keeps user, assistant, system and tool messages, not {message.type!r}")
    content = message.content if isinstance(message.content, str) else message.text
    return {"role": role, "content": content}


class DiaristChatMessageHistory(BaseChatMessageHistory):
    """A chat history stored as one diarist session (created by the first message added)."""

    def __init__(self, memory: Memory, *, app: str, session_id: str, date: Any = None):
        self.memory, self.app, self.session_id, self.date = memory, app, session_id, date

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        try:
            session = self.memory.get(self.session_id, app=self.app, kind="session")
        except (NotFound, LookupError):
            return []
        return [_to_langchain(m) for m in session["messages"]]

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        converted = [_to_diarist(m) for m in messages if (m.content if isinstance(m.content, str) else m.text).strip()]
        if converted:
            self.memory.append_messages(self.session_id, converted, app=self.app, date=self.date)

    def clear(self) -> None:
        try:
            self.memory.delete(self.session_id, app=self.app, kind="session")
        except (NotFound, LookupError):
            pass
