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
import sys
from collections.abc import Callable, Iterable, Iterator
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..errors import InvalidInput
from ..write.validate import SessionInput
from .reader import parse_json_records, read_text

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
    """One input: a file (``path``) or standard input (``"-"``). Its text is read once and its
    JSON parsed once, lazily, whichever importers look at it.

    ``name`` is what errors call it (the path as given, or ``<stdin>``); ``root`` is the folder
    it was found in when a folder is imported (``relative`` is then its path inside it)."""

    def __init__(self, path: str | Path, *, root: Path | None = None, text: str | None = None) -> None:
        self.is_stdin = str(path) == STDIN
        self.path = None if self.is_stdin else Path(path)
        self.root = root
        self.name = STDIN_NAME if self.is_stdin else str(path)
        if text is not None:
            self.__dict__["text"] = text

    def __repr__(self) -> str:
        return f"Source({self.name!r})"

    @cached_property
    def text(self) -> str:
        if self.is_stdin:
            return sys.stdin.read().removeprefix("\ufeff")
        return read_text(self.path)

    @cached_property
    def _parsed(self) -> tuple[list[Any] | None, InvalidInput | None]:
        try:
            return parse_json_records(self.text, self.name), None
        except InvalidInput as exc:
            return None, exc

    @property
    def records(self) -> list[Any] | None:
        """The JSON records (see ``parse_json_records``), or None when the text is not JSON."""
        return self._parsed[0]

    @property
    def json_error(self) -> InvalidInput | None:
        """Why the text did not parse as JSON (None when it did)."""
        return self._parsed[1]

    def require_records(self) -> list[Any]:
        """The records, or the JSON error itself (naming the file and the line)."""
        if self.json_error is not None:
            raise self.json_error
        return self.records

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
        first = _FIRST_CHARACTER.search(self.text)  # not text.lstrip(): a copy of a 300 MB export
        return first is not None and first.group() in ("{", "[")

    def peek(self, n: int = PEEK) -> list[Any]:
        """The first ``n`` records (empty when the text is not JSON)."""
        return (self.records or [])[:n]


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


def limited(records: list[Any], limit: int | None) -> list[Any]:
    return records[:limit] if limit else records


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
    for number, conversation in enumerate(limited(source.require_records(), limit), start=1):
        where = f"{source.name} conversation {number}"
        try:
            session = convert(conversation, where)
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            if isinstance(exc, InvalidInput):
                raise
            raise InvalidInput(f"{where}: not a valid {title} conversation ({shape_error(exc)})") from None
        if session is not None:
            yield session


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
