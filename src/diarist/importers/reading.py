"""Reading a file with a bound: what an import may open, how much it may read, and JSON records
parsed one at a time.

A path is read only when it is a regular file (a link is followed only to a regular file, and,
inside an imported folder, only to one inside that folder): a device (``/dev/zero``), a FIFO, a
socket or a folder is refused by name before it is opened, so nothing hangs or reads forever. At
most ``max_bytes`` bytes are read from a file, counted after gunzipping (a small ``.gz`` that
inflates to gigabytes stops at the bound), and from standard input; past it the read stops with
one line naming ``--max-bytes``. JSON lists and JSONL are parsed record by record
(``iter_records``), so ``--limit 3`` and format detection parse only the first records, and a
file is never held twice over as text and as its records' list.
"""

from __future__ import annotations

import codecs
import io
import json
import os
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from ..errors import InvalidInput
from ..files import open_regular, too_big

#: Bytes read from one file (after gunzipping) or from standard input, unless --max-bytes says
#: otherwise. Peak memory of an ingest is about three times the largest file read
#: (RELIABILITY.md measures it); raise it for a bigger export.
DEFAULT_MAX_BYTES = 512 * 1024 * 1024
CHUNK_BYTES = 1024 * 1024
_WHITESPACE = " \t\r\n"


def check_readable(path: Path, root: Path | None = None) -> None:
    """InvalidInput unless ``path`` is (or links to) a regular file, inside ``root`` when given
    (``files.open_regular`` checks it again on the file it opens)."""
    os.close(open_regular(path, root))


def _raw_chunks(path: Path, max_bytes: int, root: Path | None = None) -> Iterator[bytes]:
    """The file's bytes, gunzipped when it ends in .gz, at most ``max_bytes`` of them; opened once
    (``files.open_regular``: a FIFO swapped in never blocks, a link swapped out is refused)."""
    with os.fdopen(open_regular(path, root), "rb") as handle:
        yield from _bounded(handle, str(path), max_bytes)


def _bounded(handle: BinaryIO, name: str, max_bytes: int) -> Iterator[bytes]:
    import gzip

    gz = name.lower().endswith(".gz")
    stream = gzip.GzipFile(fileobj=handle) if gz else handle
    total = 0
    while True:
        try:
            chunk = stream.read(min(CHUNK_BYTES, max_bytes + 1 - total))
        except (OSError, EOFError, zlib.error) as exc:
            raise InvalidInput(f"{name}: not a valid gzip file ({exc})") from None
        if not chunk:
            return
        total += len(chunk)
        if total > max_bytes:
            raise too_big(name, max_bytes, gz)
        yield chunk


def bytes_text(raw: bytes, name: str, max_bytes: int) -> str:
    """The text of a file's bytes already read (gunzipped when ``name`` ends in .gz), bounded and
    checked as ``file_chunks`` reads a file."""
    return "".join(text_chunks(_bounded(io.BytesIO(raw), name, max_bytes), name))


def stdin_bytes(max_bytes: int) -> bytes:
    """Standard input, at most ``max_bytes`` (InvalidInput past it)."""
    data = sys.stdin.buffer.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise too_big("<stdin>", max_bytes)
    return data


def text_chunks(raw: Iterator[bytes], name: str) -> Iterator[str]:
    """Decoded UTF-8 text of a byte stream, a leading byte-order mark dropped; an invalid byte, or
    a NUL (binary data), is named by its line and offset."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = lines = 0
    first = True
    for chunk in raw:
        try:
            text = decoder.decode(chunk)
        except UnicodeDecodeError as exc:
            line = lines + chunk.count(b"\n", 0, max(exc.start, 0)) + 1
            raise InvalidInput(f"{name} line {line}: invalid UTF-8 at byte {offset + max(exc.start, 0)}") from None
        nul = chunk.find(0)
        if nul >= 0:  # no text format holds one raw (JSON escapes it): a binary file, whatever its name
            line = lines + chunk.count(b"\n", 0, nul) + 1
            raise InvalidInput(f"{name} line {line}: a NUL byte at byte {offset + nul}: binary data, not text; not read")
        offset += len(chunk)
        lines += chunk.count(b"\n")
        if first and text:
            text, first = text.removeprefix("\ufeff"), False
        if text:
            yield text
    try:
        tail = decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        raise InvalidInput(f"{name} line {lines + 1}: invalid UTF-8 at byte {offset - 1} (the file ends mid-character)") from None
    if tail:
        yield tail


def file_chunks(path: Path, max_bytes: int, root: Path | None = None) -> Iterator[str]:
    """The text of a file, checked (``check_readable``) and bounded, in chunks."""
    check_readable(path, root)  # now, not at the first chunk: errors before any text
    return text_chunks(_raw_chunks(path, max_bytes, root), str(path))


# -- JSON records, one at a time ------------------------------------------------------------------

_DECODER = json.JSONDecoder()


class _Buffer:
    """Text read so far from a chunk stream, with what was consumed dropped (line count kept)."""

    def __init__(self, chunks: Iterator[str]):
        self.chunks = chunks
        self.text = ""
        self.pos = 0
        self.lines_before = 0  # newlines in the text already dropped
        self.eof = False

    def more(self) -> bool:
        """Read at least as much again as is buffered (so a long record costs O(n log n))."""
        if self.eof:
            return False
        dropped = self.text[: self.pos]
        self.lines_before += dropped.count("\n")
        parts, wanted, got = [self.text[self.pos :]], max(len(self.text) - self.pos, 1), 0
        self.pos = 0
        while got < wanted:
            chunk = next(self.chunks, None)
            if chunk is None:
                self.eof = True
                break
            parts.append(chunk)
            got += len(chunk)
        self.text = "".join(parts)
        return got > 0

    def skip_space(self) -> str:
        """The next character that is not whitespace ('' at the end)."""
        while True:
            while self.pos < len(self.text) and self.text[self.pos] in _WHITESPACE:
                self.pos += 1
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self.more():
                return ""

    def line(self, pos: int | None = None) -> int:
        return self.lines_before + self.text.count("\n", 0, self.pos if pos is None else pos) + 1

    def value(self, name: str, whole_line: bool) -> Any:
        """The JSON value at the cursor, reading more as needed; errors name the line (the
        value's first line when ``whole_line``, JSONL's way; else the error's own line)."""
        while True:
            start = self.pos
            try:
                value, end = _DECODER.raw_decode(self.text, start)
            except json.JSONDecodeError as exc:
                line = self.line(start) if whole_line else self.lines_before + exc.lineno
                if self.more():
                    continue
                raise InvalidInput(f"{name} line {line}: invalid JSON ({exc.msg})") from None
            except RecursionError:
                raise InvalidInput(f"{name} line {self.line(start)}: JSON nested too deeply") from None
            except ValueError as exc:  # an integer of more than 4,300 digits
                reason = "a number has too many digits" if "digits" in str(exc) else str(exc)
                raise InvalidInput(f"{name} line {self.line(start)}: JSON value out of range ({reason})") from None
            if end == len(self.text) and not self.eof and self.more():
                continue  # a number cut at the buffer's end may go on
            self.pos = end
            return value


#: A document that is one object holding its records under one of these keys is read as them
#: (diarist's {"sessions": [...]}, Claude.ai's wrapped {"conversations": [...]}).
WRAPPER_KEYS = ("sessions", "conversations")


def iter_records(chunks: Iterator[str], name: str) -> Iterator[Any]:
    """The records of JSON text: each element of a list, each value of JSONL, the list under a
    wrapper key (``WRAPPER_KEYS``) of one object, or the one object; parsed one at a time."""
    buf = _Buffer(chunks)
    first = buf.skip_space()
    if first == "":
        raise InvalidInput(f"{name}: file is empty")
    if first == "[":
        buf.pos += 1
        if buf.skip_space() == "]":
            buf.pos += 1
        else:
            while True:
                yield buf.value(name, whole_line=False)
                nxt = buf.skip_space()
                buf.pos += 1
                if nxt == "]":
                    break
                if nxt != ",":
                    what = "the file ends" if nxt == "" else f"found {nxt!r}"
                    raise InvalidInput(f"{name} line {buf.line(buf.pos - 1)}: invalid JSON (expected ',' or ']', {what})")
                buf.skip_space()
        if buf.skip_space() != "":
            raise InvalidInput(f"{name} line {buf.line()}: invalid JSON (Extra data after the list)")
        return
    if first != "{":
        value = buf.value(name, whole_line=False)  # a scalar: the error says what it is
        if buf.skip_space() != "":
            raise InvalidInput(f"{name} line {buf.line()}: invalid JSON (Extra data)")
        raise InvalidInput(f"{name}: expected a JSON object or list, got {type(value).__name__}")
    value = buf.value(name, whole_line=True)
    if buf.skip_space() == "":  # one object
        wrapped = next((value[k] for k in WRAPPER_KEYS if isinstance(value.get(k), list)), None)
        yield from (wrapped if wrapped is not None else [value])
        return
    yield value  # JSONL: one value per line
    while buf.skip_space() != "":
        yield buf.value(name, whole_line=True)
