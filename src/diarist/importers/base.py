"""The importer interface: a ``Source`` (one file or standard input, read and parsed once) and
the ``Importer`` protocol every format module implements, with the helpers they share.

An importer turns one source into ``SessionInput``s; it never validates them (the caller checks
every session with ``write.validate.check_session`` before anything is stored) and never stores.
What each importer keeps of its format is said in its module docstring and in the README
("Importing your history").
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..errors import InvalidInput
from ..write.validate import SessionInput
from .reading import DEFAULT_MAX_BYTES, file_chunks, iter_records, stdin_bytes, text_chunks

STDIN = "-"
STDIN_NAME = "<stdin>"

#: File kinds read as JSON (plain or gzipped) and as text notes.
JSON_SUFFIXES = (".json", ".jsonl", ".ndjson")
TEXT_SUFFIXES = (".md", ".markdown", ".txt")

#: A tool call is kept as a short line, a tool's output up to this many characters.
TOOL_ARGS_CHARS = 200
TOOL_RESULT_CHARS = 2_000

#: Detection looks at this many records at most (cheap on a 100 MB export).
PEEK = 50
_FIRST_CHARACTER = re.compile(r"\S")


# -- reading ---------------------------------------------------------------------------------------


class Source:
    """One input: a file (``path``) or standard input (``"-"``), read with a bound
    (``max_bytes``, see ``importers.reading``). Its JSON records are parsed one at a time, the
    first ``PEEK`` once for detection; its whole text only when an importer asks (notes).

    ``name`` is what errors call it (the path as given, or ``<stdin>``); ``root`` is the folder
    it was found in when a folder is imported (``relative`` is then its path inside it)."""

    def __init__(self, path: str | Path, *, root: Path | None = None, text: str | None = None,
                 max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.is_stdin = str(path) == STDIN
        self.path = None if self.is_stdin else Path(path)
        self.root = root
        self.max_bytes = max_bytes
        self.name = STDIN_NAME if self.is_stdin else str(path)
        self._stdin: bytes | None = None
        self.dropped: list[str] = []  # records read and not kept, each "NAME record N: why"
        if text is not None:
            self.__dict__["text"] = text

    def __repr__(self) -> str:
        return f"Source({self.name!r})"

    def drop(self, where: str, why: str) -> None:
        """Name a record read and not kept (``diarist ingest`` prints it, and counts it)."""
        self.dropped.append(f"{where}: {why}")

    def chunks(self) -> Iterator[str]:
        """The text from its start, in chunks (a file is opened again each time)."""
        if "text" in self.__dict__:
            return iter([self.__dict__["text"]])
        if self.is_stdin:
            if self._stdin is None:
                self._stdin = stdin_bytes(self.max_bytes)
            return text_chunks(iter([self._stdin]), self.name)
        return file_chunks(self.path, self.max_bytes, self.root)

    @cached_property
    def text(self) -> str:
        return "".join(self.chunks())

    def is_blank(self) -> bool:
        """Nothing but whitespace (read until the first other character)."""
        return all(not chunk.strip() for chunk in self.chunks())

    @cached_property
    def _peeked(self) -> tuple[list[Any] | None, InvalidInput | None]:
        records: list[Any] = []
        try:
            for record in iter_records(self.chunks(), self.name):
                records.append(record)
                if len(records) >= PEEK:
                    break
        except InvalidInput as exc:
            if _READ_ERROR.search(str(exc)):
                raise  # the file itself cannot be read: no format would do better
            if not records:
                return None, exc
            # a later record is broken: reading raises it when it gets there (--limit may stop first)
        return records, None

    @property
    def records(self) -> list[Any] | None:
        """The first ``PEEK`` JSON records, or None when the text is not JSON (detection)."""
        return self._peeked[0]

    @property
    def json_error(self) -> InvalidInput | None:
        """Why the text did not parse as JSON (None when its first records did)."""
        return self._peeked[1]

    def iter_records(self, limit: int | None = None) -> Iterator[Any]:
        """The JSON records, parsed one at a time (the first ``limit`` only); the JSON error
        itself (naming the file and the line) when the text is not JSON."""
        if self.json_error is not None:
            raise self.json_error
        for number, record in enumerate(iter_records(self.chunks(), self.name), start=1):
            yield record
            if limit and number >= limit:
                return

    def require_records(self) -> list[Any]:
        """Every record, as a list."""
        return list(self.iter_records())

    @property
    def suffix(self) -> str:
        """The file's kind in lower case, ``.gz`` looked through (``x.jsonl.gz`` -> ``.jsonl``)."""
        if self.path is None:
            return ""
        suffixes = [s.lower() for s in self.path.suffixes]
        if suffixes and suffixes[-1] == ".gz":
            suffixes.pop()
        return suffixes[-1] if suffixes else ""

    @property
    def stem(self) -> str:
        """The file name without its kind (``abc.jsonl.gz`` -> ``abc``); empty for stdin."""
        if self.path is None:
            return ""
        name = self.path.name
        if name.lower().endswith(".gz"):
            name = name[:-3]
        suffix = self.suffix
        return name[: -len(suffix)] if suffix and name.lower().endswith(suffix) else name

    @property
    def relative(self) -> str | None:
        """Its path inside the imported folder, or its file name; None for stdin."""
        if self.path is None:
            return None
        if self.root is not None:
            try:
                return self.path.relative_to(self.root).as_posix()
            except ValueError:
                pass
        return self.path.name

    def looks_like_json(self) -> bool:
        """A JSON kind of file, or text that starts like JSON (used to report the JSON error)."""
        if self.suffix in JSON_SUFFIXES:
            return True
        for chunk in self.chunks():
            if first := _FIRST_CHARACTER.search(chunk):
                return first.group() in ("{", "[")
        return False

    def peek(self, n: int = PEEK) -> list[Any]:
        """The first ``n`` records (empty when the text is not JSON)."""
        return (self.records or [])[:n]


#: Errors of reading the file (not of its JSON): raised at once, whatever the format.
_READ_ERROR = re.compile(r"invalid UTF-8|not a valid gzip|bytes, the bound|no such file|cannot read|not a file|"
                         r"regular file|outside the folder|does not exist")


# -- the interface ---------------------------------------------------------------------------------


@runtime_checkable
class Importer(Protocol):
    """One format. ``detect`` is cheap (the first records, the file's kind); ``read`` does the work.

    ``detect(source)`` returns True when the source is in this format, else a short clause saying
    why not (``"no 'mapping' in record 1"``); with ``forced=True`` (the user named the format) it
    refuses only what the importer cannot read at all. ``read(source, limit)`` yields sessions
    from the first ``limit`` top-level records (conversations, sessions, questions) and raises
    InvalidInput naming the source and the record when the shape is wrong."""

    name: str  #: the --format value
    title: str  #: what the format is, in a few words
    suffixes: tuple[str, ...]  #: the kinds of file this format comes in (for folders)
    unit: str  #: what error messages call one item ("record", "session")

    def detect(self, source: Source, *, forced: bool = False) -> bool | str: ...

    def read(self, source: Source, limit: int | None = None) -> Iterator[SessionInput]: ...


# -- helpers the importers share -------------------------------------------------------------------


def record_shape(source: Source) -> str | None:
    """Why the source is not a list of JSON objects, or None when it is (a detect clause)."""
    if source.records is None:
        return "not JSON"
    if not source.records:
        return "no records"
    first = source.records[0]
    if not isinstance(first, dict):
        return f"record 1 is a {type(first).__name__}, not an object"
    return None


def limited(records: Iterable[Any], limit: int | None) -> Iterator[Any]:
    """The first ``limit`` records (all without a limit), consumed lazily."""
    for number, record in enumerate(records, start=1):
        yield record
        if limit and number >= limit:
            return


def shape_error(exc: Exception) -> str:
    """A clause for what a malformed record broke (a KeyError, a TypeError...)."""
    if isinstance(exc, KeyError):
        return f"missing field {exc.args[0]!r}" if exc.args else "a field is missing"
    return f"a field has the wrong type or value: {str(exc)[:120]}"


def each_record(
    records: list[Any], source: Source, title: str, convert: Callable[[Any], Iterable[SessionInput]],
    unit: str = "record",
) -> Iterator[SessionInput]:
    """The sessions of every record, or InvalidInput naming the first malformed one
    (``FILE record 3: not a valid LoCoMo record (missing field 'conversation')``)."""
    for number, record in enumerate(records, start=1):
        try:
            found = list(convert(record))
        except (KeyError, TypeError, AttributeError, ValueError, IndexError) as exc:
            if isinstance(exc, InvalidInput):
                raise
            raise InvalidInput(f"{source.name} {unit} {number}: not a valid {title} {unit} ({shape_error(exc)})") from None
        yield from found


def each_conversation(
    source: Source, limit: int | None, title: str,
    convert: Callable[[Any, str], SessionInput | None],
) -> Iterator[SessionInput]:
    """The session of every conversation of an export (None: an empty one, skipped), or
    InvalidInput naming the first malformed one (``FILE conversation 3: not a valid ...``)."""
    for number, conversation in enumerate(source.iter_records(limit), start=1):
        where = f"{source.name} conversation {number}"
        try:
            session = convert(conversation, where)
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            if isinstance(exc, InvalidInput):
                raise
            raise InvalidInput(f"{where}: not a valid {title} conversation ({shape_error(exc)})") from None
        if session is not None:
            yield session
        else:
            title = conversation.get("title") or conversation.get("name") if isinstance(conversation, dict) else None
            source.drop(where + (f" ({title!r})" if isinstance(title, str) and title else ""), "no message with text")


def expect_object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidInput(f"{where}: expected an object, got {type(value).__name__}")
    return value


def message(role: str, content: str, time: Any = None) -> dict[str, Any]:
    """A message as ``check_message`` reads it; ``time`` only when there is one."""
    out: dict[str, Any] = {"role": role, "content": content}
    if time not in (None, "", 0):
        out["time"] = time
    return out


def iso_date(value: Any) -> str | None:
    """``value`` as an ISO 8601 date for metadata, or None when it is not a date."""
    from ..dates import normalise_date

    try:
        return normalise_date(value)
    except InvalidInput:
        return None


def capped(text: str, limit: int) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    return f"{text[:limit].rstrip()} [... {len(text) - limit:,} more characters]"


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def tool_call(name: Any, arguments: Any) -> str:
    """``called tool NAME(ARGS)``, the arguments shortened to TOOL_ARGS_CHARS characters."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip()[:1] in ("{", "[") else arguments
        except (json.JSONDecodeError, RecursionError):
            pass
    if isinstance(arguments, dict):
        args = ", ".join(f"{k}={_compact(v)}" for k, v in arguments.items())
    elif arguments in (None, ""):
        args = ""
    elif isinstance(arguments, str):
        args = " ".join(arguments.split())
    else:
        args = _compact(arguments)
    if len(args) > TOOL_ARGS_CHARS:
        args = args[:TOOL_ARGS_CHARS].rstrip() + "..."
    return f"called tool {name or 'unknown'}({args})"


def tool_result(name: Any, text: str, *, failed: bool = False) -> str:
    """A tool's output, shortened to TOOL_RESULT_CHARS characters, saying which tool it came from."""
    body = capped(text, TOOL_RESULT_CHARS)
    verb = "failed" if failed else "returned"
    return f"{name} {verb}: {body}" if name else (f"tool failed: {body}" if failed else body)


def placeholder(kind: str) -> str:
    """What stands for something that is not text: ``[image]``, ``[audio]``, ``[file NAME]``."""
    return f"[{kind}]"
