"""Chunking: split a session into pieces that fit the embedder's window.

Length is measured with the embedder's own tokenizer. Consecutive turns are packed together up
to the window; a turn longer than the window is split between paragraphs, then sentences, then
at token boundaries, but a fenced code block is never cut: one that alone exceeds the window
becomes a chunk of its own, and the embedder reads it window by window (nothing is truncated).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..embed.base import Embedder
from ..note_view import note_title
from ..types import Chunk, Message
from .plan import DEFAULT_PLAN, IndexPlan, get_plan


_FENCE = re.compile(r"^(```|~~~)", re.MULTILINE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass
class _Unit:
    text: str
    n_tokens: int
    turn: int
    role: str


def split_code_fences(text: str) -> list[tuple[str, bool]]:
    """Split text into (segment, is_code_block) with fenced blocks kept whole."""
    segments: list[tuple[str, bool]] = []
    pos = 0
    marks = [m for m in _FENCE.finditer(text)]
    i = 0
    while i < len(marks):
        opening = marks[i]
        closing = next((m for m in marks[i + 1 :] if m.group(1) == opening.group(1)), None)
        if closing is None:  # an unclosed fence runs to the end of the text
            end = len(text)
            j = len(marks)
        else:
            line_end = text.find("\n", closing.end())
            end = len(text) if line_end == -1 else line_end
            j = marks.index(closing) + 1
        if opening.start() > pos:
            segments.append((text[pos : opening.start()], False))
        segments.append((text[opening.start() : end], True))
        pos = end
        i = j
        while i < len(marks) and marks[i].start() < pos:
            i += 1
    if pos < len(text):
        segments.append((text[pos:], False))
    return [(s, code) for s, code in segments if s.strip()]


def _split_prose(text: str, embedder: Embedder, limit: int) -> list[tuple[str, int]]:
    """Split prose that exceeds the limit: paragraphs, then sentences, then token windows;
    (piece, its tokens), each piece counted once."""
    out: list[tuple[str, int]] = []
    for paragraph in re.split(r"\n\s*\n", text):
        if not (paragraph := paragraph.strip()):
            continue
        if (n := embedder.count_tokens(paragraph)) <= limit:
            out.append((paragraph, n))
            continue
        for sentence in _SENTENCE_END.split(paragraph):
            if not (sentence := sentence.strip()):
                continue
            if (n := embedder.count_tokens(sentence)) <= limit:
                out.append((sentence, n))
            else:
                out.extend((piece.strip(), n) for piece, n in embedder.pieces(sentence, limit))
    return out


def _units(turn: int, message: Message, n: int, embedder: Embedder, limit: int) -> list[_Unit]:
    """The units of a message of ``n`` tokens."""
    if n <= limit:
        return [_Unit(message.content.strip(), n, turn, message.role)]
    units: list[_Unit] = []
    for segment, is_code in split_code_fences(message.content):
        if is_code:
            code = segment.strip("\n")
            pieces = [(code, embedder.count_tokens(code))]
        else:
            pieces = _split_prose(segment, embedder, limit)
        units += [_Unit(piece, n_piece, turn, message.role) for piece, n_piece in pieces]
    return units


def _pack(
    units: list[_Unit],
    limit: int,
    view: str,
    start_position: int,
    dense: bool = True,
    lexical: bool = True,
    embed_roles: tuple[str, ...] | None = None,
    one_turn: bool = False,
) -> list[Chunk]:
    """Pack consecutive units up to the limit. With embed_roles, the chunk's vector reads only
    the units of those roles (and a chunk without any gets no vector)."""
    chunks: list[Chunk] = []
    group: list[_Unit] = []
    size = 0

    def flush() -> None:
        nonlocal group, size
        if group:
            roles = tuple(dict.fromkeys(u.role for u in group))
            embed_text = None
            has_vector = dense
            if embed_roles is not None:
                embed_text = "\n".join(u.text for u in group if u.role in embed_roles)
                has_vector = dense and bool(embed_text)
                if not has_vector or embed_text == "\n".join(u.text for u in group):
                    embed_text = None
            chunks.append(
                Chunk(
                    text="\n".join(u.text for u in group),
                    position=start_position + len(chunks),
                    roles=roles,
                    first_turn=group[0].turn,
                    last_turn=group[-1].turn,
                    view=view,
                    n_tokens=size,
                    dense=has_vector,
                    lexical=lexical,
                    embed_text=embed_text,
                )
            )
        group, size = [], 0

    for unit in units:
        if group and (size + unit.n_tokens > limit or (one_turn and unit.turn != group[-1].turn)):
            flush()
        group.append(unit)
        size += unit.n_tokens
    flush()
    return chunks


def title_line(metadata: dict) -> str | None:
    """The line a titled item's chunks begin with, so that both channels read its name: a note's
    title and, when it differs, its file name (``Soup of the house · soup``); another item's
    ``title`` (a conversation's name in its export). None for an item without one (LoCoMo and
    LongMemEval sessions: their chunks are what they were)."""
    if metadata.get("source") == "markdown":
        title = note_title(metadata)
        path = metadata.get("path")
        stem = note_title({"path": path}) if isinstance(path, str) else None
        names = [n for n in dict.fromkeys((title, stem)) if n and n.strip()]
        return " · ".join(" ".join(n.split()) for n in names) or None
    title = metadata.get("title")
    return " ".join(title.split()) or None if isinstance(title, str) else None


def with_title(chunks: list[Chunk], title: str | None, count_tokens) -> list[Chunk]:
    """Each chunk begun by the title line: in its text (BM25 reads it, the block shows it) and in
    the text its vector reads. Its tokens are counted in; the chunker left room for them."""
    if not title:
        return chunks
    n = count_tokens(title + "\n")
    return [Chunk(text=f"{title}\n{c.text}", position=c.position, roles=c.roles, first_turn=c.first_turn,
                  last_turn=c.last_turn, view=c.view, n_tokens=c.n_tokens + n, dense=c.dense, lexical=c.lexical,
                  embed_text=None if c.embed_text is None else f"{title}\n{c.embed_text}") for c in chunks]


def chunk_session(
    messages: Sequence[Message], embedder: Embedder, plan: "IndexPlan | str" = DEFAULT_PLAN,
    max_tokens: int | None = None, title: str | None = None,
) -> list[Chunk]:
    """Chunks of a session under an index plan (``diarist.write.plan``), set after set.

    The default plan, "split", chunks every turn once: BM25 reads each chunk, its vector only
    the user's words in it (embedding assistant text costs ~7x the user's on LongMemEval; BM25
    reads it for free). A chunk with no user turn is found by BM25 alone. Keeping one chunk in
    both channels is what lets fusion reward the two rankings' agreement. ``title``: the item's
    title line (``title_line``), which begins every chunk (room is left for it in the window).
    """
    plan = get_plan(plan)
    limit = min(max_tokens or embedder.window, embedder.window)
    if title:
        limit = max(limit - embedder.count_tokens(title + "\n"), limit // 2)
    turns = [(turn, message) for turn, message in enumerate(messages) if message.content.strip()]
    counts = embedder.count_tokens_many([message.content for _, message in turns])  # one call per session
    all_units = [unit for (turn, message), n in zip(turns, counts) for unit in _units(turn, message, n, embedder, limit)]
    chunks: list[Chunk] = []
    for chunk_set in plan.sets:
        units = [u for u in all_units if chunk_set.keeps(u.role)]
        chunks += _pack(units, limit, chunk_set.label, len(chunks), dense=chunk_set.dense,
                        lexical=chunk_set.lexical, embed_roles=chunk_set.vector_roles,
                        one_turn=chunk_set.grain == "turn")
    return with_title(chunks, title, embedder.count_tokens)
