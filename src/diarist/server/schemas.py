"""The HTTP API's request and response bodies (pydantic models), their bounds, and the error
responses every route declares (``ERRORS``)."""

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .. import settings
from ..write.validate import check_json, check_metadata

MAX_PAGE = 500
MAX_K = 100
MAX_TEXT = 100_000
MAX_QUERY = 10_000

Role = Literal["user", "assistant", "system", "tool"]
Id = Annotated[str, Field(min_length=1, max_length=256)]


def _check_metadata(value: dict[str, Any]) -> dict[str, Any]:
    # The library's own check (plain JSON, valid Unicode, bounded depth and size): an
    # InvalidInput is a ValueError, which pydantic reports as a 422 naming the field.
    return check_metadata(value)


def _check_chat(messages: "list[ChatMessage] | None") -> "list[ChatMessage] | None":
    # The messages are sent back (with the block placed): every string in them must be
    # encodable, or the response itself could not be written.
    for i, message in enumerate(messages or ()):
        check_json(message.model_dump(), f"message {i}")
    return messages


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MessageIn(Strict):
    role: Role
    content: str = Field(min_length=1, max_length=1_000_000)
    time: str | None = Field(default=None, max_length=64, description="When the message was sent (ISO 8601).")


class SessionIn(Strict):
    session_id: Id | None = Field(default=None, description="Your id; default: a hash of the content.")
    date: str | None = Field(default=None, max_length=64, description="When the session happened (ISO 8601).")
    metadata: dict[str, Any] = Field(default_factory=dict)
    messages: list[MessageIn] = Field(min_length=1, max_length=10_000)

    _metadata = field_validator("metadata")(_check_metadata)


class SessionsIn(Strict):
    sessions: list[SessionIn] = Field(min_length=1, max_length=100)


class MessagesIn(Strict):
    messages: list[MessageIn] = Field(min_length=1, max_length=1_000)
    date: str | None = Field(default=None, max_length=64, description="Date of the session if it is new.")


class FactIn(Strict):
    text: str = Field(min_length=1, max_length=MAX_TEXT)
    fact_id: Id | None = None
    date: str | None = Field(default=None, max_length=64)
    metadata: dict[str, Any] = Field(default_factory=dict)

    _metadata = field_validator("metadata")(_check_metadata)


class SearchIn(Strict):
    query: str = Field(min_length=1, max_length=MAX_QUERY)
    k: int = Field(default=settings.HTTP_K, ge=1, le=MAX_K)
    previous: str | None = Field(default=None, max_length=MAX_QUERY, description="The previous turn, for a follow-up.")
    where: dict[str, Any] | None = Field(
        default=None, description='Only items whose metadata has these top-level keys equal to these values, e.g. {"source": "chat"}.')
    explain: bool = Field(default=False, description="Say why each hit was recalled (`why`) and what each stage left out (`dropped`).")

    _where = field_validator("where")(lambda v: v if v is None else _check_metadata(v))


class FactUpdateIn(Strict):
    text: str | None = Field(default=None, min_length=1, max_length=MAX_TEXT, description="The new text (default: kept).")
    date: str | None = Field(default=None, max_length=64, description="The new date (default: kept).")
    metadata: dict[str, Any] | None = Field(default=None, description="The new metadata, whole (default: kept).")

    _metadata = field_validator("metadata")(lambda v: v if v is None else _check_metadata(v))


class VersionOut(BaseModel):
    replaced_at: str
    kind: Literal["session", "fact"]
    session_id: str | None = None
    fact_id: str | None = None
    date: str | None
    metadata: dict[str, Any]
    text: str | None = None
    messages: list[dict[str, Any]] | None = None


class HistoryOut(BaseModel):
    versions: list[VersionOut] = Field(description="Previous versions kept by updates, oldest first.")


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: str = Field(max_length=64)
    content: str | list[dict[str, Any]] | None = None


class ContextIn(Strict):
    query: str | None = Field(default=None, min_length=1, max_length=MAX_QUERY,
                              description="The question; default: the last user turn of `messages`.")
    messages: list[ChatMessage] | None = Field(
        default=None, max_length=1_000,
        description="An OpenAI-style chat; the response returns it with the block in the last user turn.")
    previous: str | None = Field(default=None, max_length=MAX_QUERY)
    budget_tokens: int = Field(default=settings.CONTEXT_BUDGET_TOKENS, ge=1, le=100_000)
    k: int = Field(default=settings.CONTEXT_K, ge=1, le=MAX_K)
    order: Literal["date", "relevance"] = "date"
    explain: bool = Field(default=False, description="Say why each memory was chosen and what each stage left out.")
    trim: Literal["auto", "lines", "pointers", "none"] = Field(
        default="auto", description="How each memory is shown: the default (auto: pointers with the default model, "
        "else whole), the best memories whole and a pointer line for the next ones (pointers), by its lines closest "
        "in meaning to the question (lines: a pointer for each runner-up, one embedding per line), or whole (none).")

    _messages = field_validator("messages")(_check_chat)


class ErrorBody(BaseModel):
    status: int
    code: str
    message: str


class ErrorOut(BaseModel):
    error: ErrorBody


class StoredOut(BaseModel):
    id: str
    status: Literal["added", "replaced", "unchanged"]
    chunks: int


class BatchOut(BaseModel):
    added: list[str]
    replaced: list[str]
    unchanged: list[str]
    chunks: int


class HitOut(BaseModel):
    chunk_id: int
    session_id: str | None
    fact_id: str | None
    date: str | None
    text: str
    score: float
    ranks: dict[str, int | None]
    scores: dict[str, float | None]
    roles: list[str]
    view: str
    stage: str
    app: str | None
    first_turn: int | None = None
    last_turn: int | None = None
    id: str | None = None
    title: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    passages: list[str] = Field(default_factory=list, description="The memory's best passages, in original order.")
    why: dict[str, Any] | None = Field(default=None, description="With explain: why it was recalled.")


class StageOut(BaseModel):
    stage: str
    kept: int
    dropped: int
    note: str


class DroppedOut(BaseModel):
    id: str
    stage: str
    reason: str
    score: float | None = None


class SearchOut(BaseModel):
    hits: list[HitOut]
    notes: list[str]
    trace: list[StageOut] = Field(default_factory=list, description="What each stage of the read path decided.")
    dropped: list[DroppedOut] = Field(default_factory=list, description="With explain: what each stage left out.")


class SnippetOut(HitOut):
    n_tokens: int
    earlier_than: int | None = None


class ContextOut(BaseModel):
    context: str = Field(description="The block to put in the prompt; empty when nothing relevant was found.")
    n_tokens: int
    snippets: list[SnippetOut]
    notes: list[str]
    trace: list[StageOut] = Field(default_factory=list, description="What each stage of the read path decided.")
    dropped: list[DroppedOut] = Field(default_factory=list, description="With explain: what each stage left out.")
    messages: list[dict[str, Any]] | None = None


class MessageOut(BaseModel):
    role: str
    content: str
    time: str | None


class ItemOut(BaseModel):
    kind: Literal["session", "fact"]
    session_id: str | None = None
    fact_id: str | None = None
    date: str | None
    metadata: dict[str, Any]
    text: str | None = None
    messages: list[MessageOut] | None = None


class ListOut(BaseModel):
    items: list[dict[str, Any]]
    limit: int
    offset: int
    next_offset: int | None = Field(description="Pass as `offset` for the next page; null on the last page.")


class DeletedOut(BaseModel):
    deleted: str


class StatsOut(BaseModel):
    app: str
    sessions: int
    messages: int
    facts: int
    chunks: int
    lexical_index: str
    embedder: str


ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorOut, "description": text}
    for code, text in (
        (400, "Malformed request (e.g. an invalid Content-Length)"),
        (401, "Missing, unknown or revoked API key"),
        (403, "The key belongs to another app"),
        (404, "Not found"),
        (413, "Request body too large"),
        (422, "Invalid input"),
    )
}
