"""Property-based fuzzing of the Python API: every bad value, at every public ``Memory`` method,
raises a ``DiaristError`` (never a TypeError, OverflowError, UnicodeEncodeError, sqlite3 error...),
and a call that raised stored nothing.

"Stored nothing" is read from a second SQLite connection: ``PRAGMA data_version`` changes there
whenever the memory's own connection commits anything, so a call that raised after committing a
part of its work (one session of two, a chunk without its session) is caught.

The quick tests run a bounded number of examples (seconds); ``test_fuzz_api_heavy`` (``--heavy``)
runs many more, counts instead of stopping at the first failure, and prints the figures that
RELIABILITY.md ("Bad input") reports.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
from collections import Counter
from collections.abc import Iterator
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from diarist.errors import DiaristError
from diarist.memory import Memory
from diarist.write.validate import FactInput, SessionInput

APP = "fuzz"

# -- values -----------------------------------------------------------------------------------

SURROGATE = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
ODD_CHARS = st.sampled_from(["\x00", "\n", "\t", " ", "é", "\u200b", "\ufeff", "😀", "\U0010ffff", "\\", '"'])
#: Any text, lone surrogates included (Hypothesis' own text strategy leaves them out).
ANY_TEXT = st.lists(st.one_of(st.characters(), SURROGATE, ODD_CHARS), max_size=24).map("".join)
WORDS = st.sampled_from(["cat", "Admon", "garden", "river", "violin", "Paris", "Tuesday", "coffee", "42"])
GOOD_TEXT = st.lists(WORDS, min_size=1, max_size=8).map(" ".join)
TEXT = st.one_of(GOOD_TEXT, GOOD_TEXT, ANY_TEXT, st.builds(lambda: "x" * 1_000_001), st.just("a" * 300))
#: Questions that name a time (the reranker resolves them against `now`), with far-out numbers.
TIME_QUESTIONS = st.builds(
    "what did I say {} {} ago about the cat".format,
    st.one_of(st.integers(0, 10**12), st.sampled_from(["a", "two", "few"])),
    st.sampled_from(["days", "weeks", "months", "years"]),
) | st.builds("in the past {} {} or in {} {}".format, st.integers(0, 10**7), st.sampled_from(["days", "years"]),
              st.sampled_from(["january", "december", "may"]), st.integers(0, 99999)) \
  | st.sampled_from(["what happened yesterday", "last sunday", "last year", "in december 9999", "in may 0001"])
QUERIES = st.one_of(TEXT, TIME_QUESTIONS)

_HUGE = (2**63, -(2**63) - 1, 10**20, 10**400, 10**5000, -(10**5000), 2**1000)
# (drawn by index: a strategy that holds a 5000-digit int cannot even be repr()-ed)
HUGE_INTS = st.integers(0, len(_HUGE) - 1).map(_HUGE.__getitem__)
NUMBERS = st.one_of(
    st.integers(), HUGE_INTS, st.floats(allow_nan=True, allow_infinity=True), st.just(-0.0),
    st.decimals(allow_nan=True, allow_infinity=True), st.complex_numbers(max_magnitude=10),
)


class Opaque:
    """An object no JSON encoder or SQLite driver knows."""

    def __repr__(self) -> str:
        return "Opaque()"


def _cyclic() -> Any:
    loop: dict[str, Any] = {"a": 1}
    loop["self"] = loop
    return loop


SCALARS = st.one_of(
    st.none(), st.booleans(), NUMBERS, ANY_TEXT, GOOD_TEXT, st.binary(max_size=16), st.just(bytearray(b"\xff\xfe")),
    st.datetimes(), st.dates(), st.timedeltas(), st.just(Opaque()), st.just(float("nan")),
    st.just(Ellipsis), st.just(object),
)
ANYTHING = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(st.one_of(ANY_TEXT, st.integers(), st.none(), st.tuples(st.integers())), inner, max_size=4),
        st.frozensets(st.integers(), max_size=3),
        st.builds(_cyclic),
    ),
    max_leaves=8,
)

DATES = st.one_of(
    st.none(),
    st.sampled_from([
        "2024-05-01", "2024-05-01T14:30", "2024-05-01T14:30:00Z", "2023/05/20 (Sat) 02:21", "1:56 pm on 8 May, 2023",
        "", " ", "yesterday", "2024-13-45", "0000-00-00", "9999-12-31T23:59:59", "0001-01-01", "2024-05-01T14:30+25:00",
        "1e400", "nan", "2024-05-01\ud800", "\udcff",
    ]),
    st.integers(), HUGE_INTS, st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, 1, -1, 1_700_000_000, 1_700_000_000.5, 253402300800, -62135596801, 1e18, -1e18, 2**53]),
    st.datetimes(), st.datetimes(timezones=st.just(timezone.utc)),
    st.just(datetime.max), st.just(datetime.min), st.just(datetime.max.replace(tzinfo=timezone(timedelta(hours=-23)))),
    st.just(datetime.min.replace(tzinfo=timezone(timedelta(hours=23)))),
    st.dates(), ANY_TEXT, ANYTHING,
)
IDS = st.one_of(st.none(), st.sampled_from(["s1", "s2", "f1", "a", "sess-9"]), st.integers(), HUGE_INTS, ANY_TEXT,
                st.just("x" * 257), st.just(" "), ANYTHING)
APPS = st.one_of(st.just(APP), st.just(APP), st.just("other"), st.integers(min_value=0, max_value=3), ANY_TEXT,
                 st.just(""), st.just("x" * 300), ANYTHING)


def _nested(depth: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for _ in range(depth):
        out = {"d": out}
    return out


METADATA = st.one_of(
    st.none(), st.just({}), st.just({"source": "test", "n": 1, "tags": ["a", "b"], "nested": {"x": None}}),
    st.dictionaries(st.one_of(ANY_TEXT, st.integers(), st.tuples(st.integers())), ANYTHING, max_size=4),
    st.builds(lambda: {"big": "x" * 70_000}), st.builds(lambda: _nested(2000)), st.builds(lambda: _nested(50)),
    st.just({"v": float("nan")}), st.just({"v": float("inf")}), st.builds(lambda: {"v": 10**5000}), st.just({"v": 2**64}),
    st.just({1: "int key"}), st.just({"b": b"bytes"}), st.just({"\ud800": 1}), st.just({"ok": "\udfff"}),
    st.just({"t": (1, 2)}), st.just({"s": {1, 2}}), st.just({"o": Opaque()}), st.builds(_cyclic), ANYTHING,
)
ROLES = st.one_of(st.sampled_from(["user", "assistant", "system", "tool", "User ", "bot", ""]), ANYTHING)
GOOD_MESSAGE = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]), "content": GOOD_TEXT})
MESSAGE = st.one_of(
    GOOD_MESSAGE, GOOD_MESSAGE,
    st.fixed_dictionaries({"role": ROLES, "content": TEXT}, optional={"time": DATES}),
    st.fixed_dictionaries({"role": st.just("user"), "content": ANYTHING}),
    st.fixed_dictionaries({"role": st.just("user"), "text": TEXT}),
    st.dictionaries(ANY_TEXT, ANYTHING, max_size=3), ANYTHING,
)
MESSAGES = st.one_of(st.lists(GOOD_MESSAGE, min_size=1, max_size=3), st.lists(MESSAGE, max_size=4), ANYTHING)
SESSION = st.one_of(
    st.builds(SessionInput, MESSAGES, IDS, DATES, METADATA),
    st.fixed_dictionaries({"messages": MESSAGES}, optional={"session_id": IDS, "date": DATES, "metadata": METADATA}),
    st.dictionaries(ANY_TEXT, ANYTHING, max_size=3), ANYTHING,
)
KS = st.one_of(st.integers(min_value=1, max_value=50), st.integers(), HUGE_INTS, NUMBERS, ANYTHING)
CHAT = st.one_of(
    st.lists(st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "system"]),
                                    "content": st.one_of(TEXT, st.lists(st.fixed_dictionaries(
                                        {"type": st.sampled_from(["text", "image"]), "text": st.one_of(TEXT, ANYTHING)}),
                                        max_size=2), ANYTHING)}), max_size=4),
    ANYTHING,
)

# -- the harness ------------------------------------------------------------------------------


class Fuzz:
    """One memory shared by every example; counts calls and what they raised."""

    def __init__(self, path: Path, strict: bool):
        self.memory = Memory(path, embedder="hash")
        self.memory.add_session([{"role": "user", "content": "My cat is called Admon."}], app=APP, session_id="s1")
        self.memory.add_fact("The user drinks coffee on Tuesday.", app=APP, fact_id="f1")
        self.observer = sqlite3.connect(path)
        self.strict = strict
        self.calls = 0
        self.diarist_errors = 0
        self.foreign: Counter[str] = Counter()  # "method: ExceptionType" -> count
        self.half_stored: Counter[str] = Counter()
        self.examples: dict[str, str] = {}

    def version(self) -> tuple[int, int]:
        row = self.observer.execute("PRAGMA data_version").fetchone()[0]
        return row, self.observer.execute("SELECT count(*) FROM chunks").fetchone()[0]

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        before = self.version()
        try:
            result = getattr(self.memory, method)(*args, **kwargs)
            return list(result) if isinstance(result, Iterator) else result  # export() is lazy
        except DiaristError as exc:
            self.diarist_errors += 1
            str(exc)  # the message itself must be printable
            if self.version() != before:
                self._record(self.half_stored, method, exc, args, kwargs, "stored something, then raised")
        except RecursionError as exc:  # noqa: F841 - a RecursionError is a foreign exception too
            self._record(self.foreign, method, exc, args, kwargs, "not a DiaristError")
        except Exception as exc:
            self._record(self.foreign, method, exc, args, kwargs, "not a DiaristError")
        return None

    def _record(self, where: Counter, method: str, exc: BaseException, args: Any, kwargs: Any, what: str) -> None:
        key = f"{method}: {type(exc).__name__}"
        where[key] += 1
        self.examples.setdefault(key, f"{exc!s:.200} <- {_short(args)} {_short(kwargs)}")
        if self.strict:
            raise AssertionError(f"{method} {what}: {type(exc).__name__}: {exc!s:.300}") from exc

    def report(self) -> str:
        lines = [f"{self.calls} calls, {self.diarist_errors} DiaristError, "
                 f"{sum(self.foreign.values())} other exceptions, {sum(self.half_stored.values())} half-stored"]
        for key, n in (self.foreign + self.half_stored).most_common():
            lines.append(f"  {n:5d}  {key}  e.g. {self.examples[key]}")
        return "\n".join(lines)

    def close(self) -> None:
        self.observer.close()
        self.memory.close()


def _short(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:
        text = "<unprintable>"
    return text[:160]


def run_all(fuzz: Fuzz, data: st.DataObject) -> None:
    """One example: a random public method with random arguments."""
    d = data.draw
    method = d(st.sampled_from(METHODS))
    method(fuzz, d)


def mostly(valid: st.SearchStrategy, wild: st.SearchStrategy) -> st.SearchStrategy:
    """Three draws in four from ``valid``: a call with five arguments is then all valid about a
    quarter of the time, so that the paths that store and read are fuzzed too."""
    return st.one_of(valid, valid, valid, wild)


V_APP = st.sampled_from([APP, APP, "other"])
V_ID = st.one_of(st.none(), st.sampled_from(["s1", "s2", "f1", "a", "sess-9"]), st.integers(0, 50))
V_DATE = st.one_of(st.none(), st.sampled_from(["2024-05-01", "2024-05-01T14:30", "2023/05/20 (Sat) 02:21"]),
                   st.integers(0, 2_000_000_000), st.datetimes(min_value=datetime(1900, 1, 1)))
V_METADATA = st.one_of(st.none(), st.just({}), st.dictionaries(
    st.text(max_size=5), st.one_of(st.integers(-10, 10), GOOD_TEXT, st.lists(st.booleans(), max_size=2)), max_size=3))
V_MESSAGES = st.lists(GOOD_MESSAGE, min_size=1, max_size=3)
V_KIND = st.sampled_from([None, "session", "fact"])
V_K = st.integers(1, 50)
V_BUDGET = st.integers(200, 2000)


def m_add_session(f: Fuzz, d: Any) -> None:
    f.call("add_session", d(mostly(V_MESSAGES, MESSAGES)), app=d(mostly(V_APP, APPS)),
           session_id=d(mostly(V_ID, IDS)), date=d(mostly(V_DATE, DATES)), metadata=d(mostly(V_METADATA, METADATA)))


def m_add_sessions(f: Fuzz, d: Any) -> None:
    valid = st.lists(st.builds(SessionInput, V_MESSAGES, st.sampled_from(["b1", "b2", "b3", None]), V_DATE,
                               V_METADATA), max_size=3, unique_by=lambda s: s.session_id or id(s))
    sessions = d(mostly(valid, st.one_of(st.lists(SESSION, max_size=4), ANYTHING)))
    f.call("add_sessions", sessions, app=d(mostly(V_APP, APPS)))


def m_append(f: Fuzz, d: Any) -> None:
    f.call("append_messages", d(mostly(st.sampled_from(["s1", "s2", "new"]), IDS)), d(mostly(V_MESSAGES, MESSAGES)),
           app=d(mostly(V_APP, APPS)), date=d(mostly(V_DATE, DATES)))


def m_add_fact(f: Fuzz, d: Any) -> None:
    f.call("add_fact", d(mostly(GOOD_TEXT, TEXT | ANYTHING)), app=d(mostly(V_APP, APPS)),
           fact_id=d(mostly(V_ID, IDS)), date=d(mostly(V_DATE, DATES)), metadata=d(mostly(V_METADATA, METADATA)))


def m_add_facts(f: Fuzz, d: Any) -> None:
    valid = st.lists(st.builds(FactInput, GOOD_TEXT, st.sampled_from(["g1", "g2", "g3", None]), V_DATE, V_METADATA),
                     max_size=3, unique_by=lambda x: x.fact_id or id(x))
    wild = st.one_of(st.lists(st.builds(FactInput, TEXT | ANYTHING, IDS, DATES, METADATA) | ANYTHING, max_size=3),
                     ANYTHING)
    f.call("add_facts", d(mostly(valid, wild)), app=d(mostly(V_APP, APPS)))


def m_search(f: Fuzz, d: Any) -> None:
    f.call("search", d(mostly(GOOD_TEXT | TIME_QUESTIONS, QUERIES | ANYTHING)), app=d(mostly(V_APP, APPS)),
           k=d(mostly(V_K, KS)), previous=d(mostly(st.none() | GOOD_TEXT, TEXT | ANYTHING)),
           rerank=d(mostly(st.booleans(), ANYTHING)), now=d(mostly(V_DATE, DATES)))


def m_context(f: Fuzz, d: Any) -> None:
    f.call("context", d(mostly(GOOD_TEXT | TIME_QUESTIONS, QUERIES | ANYTHING)), app=d(mostly(V_APP, APPS)),
           budget_tokens=d(mostly(V_BUDGET, KS)), k=d(mostly(V_K, KS)),
           previous=d(mostly(st.none() | GOOD_TEXT, TEXT | ANYTHING)),
           min_score=d(mostly(st.none() | st.floats(-1, 1), NUMBERS | ANYTHING)),
           order=d(mostly(st.sampled_from(["date", "relevance"]), st.just("best") | ANYTHING)))


def m_with_context(f: Fuzz, d: Any) -> None:
    valid = st.lists(st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "system"]),
                                            "content": GOOD_TEXT}), max_size=3).map(
        lambda chat: chat + [{"role": "user", "content": "what is my cat called?"}])
    f.call("with_context", d(mostly(valid, CHAT)), app=d(mostly(V_APP, APPS)), budget_tokens=d(mostly(V_BUDGET, KS)))


def m_get(f: Fuzz, d: Any) -> None:
    f.call("get", d(mostly(V_ID, IDS)), app=d(mostly(V_APP, APPS)),
           kind=d(mostly(V_KIND, st.just("chunk") | ANYTHING)))


def m_list(f: Fuzz, d: Any) -> None:
    f.call("list", app=d(mostly(V_APP, APPS)), kind=d(mostly(st.sampled_from(["session", "fact"]), V_KIND | ANYTHING)),
           limit=d(mostly(V_K, KS)), offset=d(mostly(st.integers(min_value=0, max_value=5), KS)))


def m_delete(f: Fuzz, d: Any) -> None:
    f.call("delete", d(mostly(st.sampled_from(["b1", "b2", "new", 3]), IDS)), app=d(mostly(V_APP, APPS)),
           kind=d(mostly(V_KIND, st.just("chunk") | ANYTHING)))


def m_apps(f: Fuzz, d: Any) -> None:
    which = d(st.sampled_from(["stats", "app_stats", "reindex", "delete_app", "export"]))
    app = d(mostly(V_APP, APPS))
    if which == "delete_app" and app == APP:
        app = "other"  # keep the seed data; deleting other apps is fuzzed
    if which == "export":
        f.call(which, app=app)
    else:
        f.call(which, app)


METHODS = [m_add_session, m_add_sessions, m_append, m_add_fact, m_add_facts, m_search, m_context, m_with_context, m_get,
           m_list, m_delete, m_apps]

QUICK = settings(max_examples=400, deadline=None, database=None, derandomize=True,
                 suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def fuzz(tmp_path_factory):
    f = Fuzz(tmp_path_factory.mktemp("fuzz_api") / "fuzz.sqlite", strict=True)
    yield f
    f.close()


@QUICK
@given(data=st.data())
@pytest.mark.slow
def test_every_public_method_raises_only_diarist_errors(fuzz, data):
    run_all(fuzz, data)


@pytest.mark.parametrize("method", METHODS, ids=lambda m: m.__name__[2:])
@pytest.mark.slow
def test_each_method(fuzz, method):
    """Each method on its own, so that none is starved by the random choice above."""

    @settings(max_examples=60, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def run(data):
        method(fuzz, data.draw)

    run()


# -- fixed cases the findings named ----------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.add_session([{"role": "user", "content": "hi"}], app=APP, session_id="bad\ud800id"),
        lambda m: m.add_session([{"role": "user", "content": "hi \udc80"}], app=APP),
        lambda m: m.add_session([{"role": "user", "content": "hi"}], app=APP, date=10**20),
        lambda m: m.add_session([{"role": "user", "content": "hi"}], app=APP, date=float("nan")),
        lambda m: m.add_session([{"role": "user", "content": "hi"}], app=APP, date=float("inf")),
        lambda m: m.add_session([{"role": "user", "content": "hi"}], app=APP, date=-(10**12)),
        lambda m: m.add_session([{"role": "user", "content": "hi", "time": 1e300}], app=APP),
        lambda m: m.add_session([{"role": "user", "content": "hi"}], app=APP, metadata={"b": b"x"}),
        lambda m: m.add_session([{"role": "user", "content": "hi"}], app=APP, metadata={"v": float("nan")}),
        lambda m: m.add_session([{"role": "user", "content": "hi"}], app=APP, metadata={(1,): "tuple key"}),
        lambda m: m.add_session([{"role": "user", "content": "hi"}], app=APP, metadata=_cyclic()),
        lambda m: m.add_session([{"role": "user", "content": "hi"}], app=APP, metadata=_nested(5000)),
        lambda m: m.add_session([{"role": "user", "content": "hi"}], app=APP, session_id=["a", "b"]),
        lambda m: m.add_session([{"role": "user", "content": "hi"}], app=APP, session_id=10**5000),
        lambda m: m.add_session([{"role": "user", "content": "hi"}], app="\ud800"),
        lambda m: m.add_fact("a fact \ud800", app=APP),
        lambda m: m.add_fact("a fact", app=APP, fact_id=["x"]),
        lambda m: m.add_fact("a fact", app=APP, fact_id="\udfff"),
        lambda m: m.add_fact("a fact", app=APP, metadata={"o": Opaque()}),
        lambda m: m.add_fact("x" * 1_000_001, app=APP),
        lambda m: m.search("cat \ud800", app=APP),
        lambda m: m.search("cat", app=APP, previous="\udc00"),
        lambda m: m.search("cat", app=APP, previous=["list"]),
        lambda m: m.search("cat", app=APP, k=10**30),
        lambda m: m.search("cat", app=APP, now=10**20),
        lambda m: m.search("cat", app=APP, now="not a date"),
        lambda m: m.search(b"cat", app=APP),
        lambda m: m.search("cat", app=APP, k=0),
        lambda m: m.search("cat", app=APP, rerank="no"),
        lambda m: m.context("cat", app=APP, min_score="high"),
        lambda m: m.context("cat", app=APP, order=["date"]),
        lambda m: m.with_context([{"role": "user", "content": "cat \ud800"}], app=APP),
        lambda m: m.with_context([{"role": "user", "content": [{"type": "text", "text": 5}]}], app=APP),
        lambda m: m.with_context("not a chat", app=APP),
        lambda m: m.with_context(None, app=APP),
        lambda m: m.get(["s1"], app=APP),
        lambda m: m.get("\ud800", app=APP),
        lambda m: m.delete({"id": 1}, app=APP),
        lambda m: m.list(app=APP, offset=2**64),
        lambda m: m.list(app=APP, kind=None),
        lambda m: m.stats(["x"]),
        lambda m: m.append_messages("s1", "not a list", app=APP),
        lambda m: m.append_messages("s1", [{"role": "user", "content": "\ud800"}], app=APP),
        lambda m: m.append_messages(["s1"], [{"role": "user", "content": "more"}], app=APP),
        lambda m: m.add_sessions([{"messages": [{"role": "user", "content": "fine"}], "session_id": "ok1"},
                                  {"messages": [{"role": "user", "content": "fine"}], "session_id": "bad\ud800"}],
                                 app=APP),
        lambda m: m.add_sessions(5, app=APP),
    ],
)
def test_named_bad_inputs(fuzz, call):
    before = fuzz.version()
    with pytest.raises(DiaristError):
        call(fuzz.memory)
    assert fuzz.version() == before, "a call that raised stored something"


def test_good_inputs_still_work(fuzz):
    m = fuzz.memory
    assert m.add_session([{"role": "user", "content": "Ünïcode and emoji 😀 are fine"}], app=APP, session_id=7,
                         date=1_700_000_000, metadata={"n": 1.5, "tags": ["x"], "deep": _nested(20)}) == "7"
    assert m.add_fact("A fact dated by a datetime.", app=APP, date=datetime(2024, 5, 1, tzinfo=timezone.utc))
    assert m.get(7, app=APP)["metadata"]["n"] == 1.5
    assert m.search("emoji", app=APP, k=3, now=datetime(2024, 6, 1), previous="fine")
    assert isinstance(m.context("emoji", app=APP, budget_tokens=500), str)
    assert m.add_session([{"role": "user", "content": "dated"}], app=APP, date=date(2024, 5, 1).isoformat())
    assert m.add_fact("😀 ¿", app=APP)  # no indexable word at all: stored, found by its vector only


@pytest.mark.heavy
def test_fuzz_api_heavy(tmp_path):
    """Many more examples, counted rather than stopped at the first: the figures in RELIABILITY.md."""
    fuzz = Fuzz(tmp_path / "heavy.sqlite", strict=False)

    @settings(max_examples=8000, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def run(data):
        run_all(fuzz, data)

    try:
        run()
    finally:
        report = fuzz.report()
        print("\nAPI fuzz:", report, file=sys.stderr)
        fuzz.close()
    assert not fuzz.foreign and not fuzz.half_stored, report


VALID_NOWS = st.one_of(
    st.none(), st.datetimes(), st.datetimes(timezones=st.just(timezone.utc)),
    st.sampled_from(["2024-05-01T10:00", "2024-05-01T10:00+02:00", "0001-01-01", "9999-12-31T23:00", 0, 1_700_000_000]),
)


@settings(max_examples=150, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(query=TIME_QUESTIONS, now=VALID_NOWS)
@pytest.mark.slow
def test_questions_that_name_a_time_never_crash(fuzz, query, now):
    """A question like "what did I say 3000 years ago" is good input: it is answered, whatever `now` is."""
    fuzz.call("search", query, app=APP, k=5, now=now)
    fuzz.call("context", query, app=APP)


# -- derive(...) then search, backup, the key store (issue 31 item 8: these were left out) ------

DERIVE_OPTIONS = st.sampled_from(["depth", "fusion", "dense_weight", "rrf_k", "k1", "b", "lexical_fusion",
                                  "rerank_depth", "floor", "reranker"])
ANY_VALUE = st.one_of(NUMBERS, TEXT, st.none(), st.booleans(), st.builds(Opaque))
PATH_TEXT = st.one_of(ANY_TEXT, st.just("x" * 300), st.just("a\x00b"), st.just("\udcff"))


@settings(max_examples=150, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(option=DERIVE_OPTIONS, value=ANY_VALUE, query=QUERIES)
def test_derive_then_search_raises_only_diarist_errors(fuzz, option, value, query):
    try:
        derived = fuzz.memory.derive(**{option: value})
        derived.search(query, app=APP, k=3)
    except DiaristError:
        pass


@settings(max_examples=100, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(name=PATH_TEXT)
@pytest.mark.slow
def test_backup_and_keys_raise_only_diarist_errors(fuzz, tmp_path_factory, name):
    folder = tmp_path_factory.mktemp("backup")
    for call in (lambda: fuzz.memory.backup(f"{folder}/{name}"), lambda: fuzz.memory.keys.revoke(name),
                 lambda: fuzz.memory.keys.list(name), lambda: fuzz.memory.keys.check(name, name)):
        try:
            call()
        except DiaristError:
            pass


# -- Memory(...) itself (issue 31 item 8: 21 of 890 fuzzed constructions raised foreign errors) --

MEMORY_OPTIONS = st.sampled_from(["embedder", "plan", "chunk_tokens", "depth", "fusion", "dense_weight", "rrf_k", "k1",
                                  "b", "lexical_fusion", "index_lexical", "embed_cache", "reranker", "rerank_depth",
                                  "floor", "create", "dense", "group", "cut"])
#: Where a database could be: a new or existing file, ':memory:', a URL, and what is not a file.
LOCATION_KINDS = st.sampled_from(["new", "existing", "memory", "url", "special", "text", "object"])
SPECIAL_PATHS = ("/dev/zero", "/dev/null", "/dev/urandom", "{folder}", "{folder}/fifo", "{folder}/zero-link",
                 "{folder}/wal-fifo.sqlite", "{folder}/hnsw-fifo.sqlite", "sqlite:///{folder}/fifo")


def special_files(folder: Path) -> Path:
    """A FIFO, a link to /dev/zero, a database whose -wal is a FIFO and one whose graph folder is."""
    os.mkfifo(folder / "fifo")
    (folder / "zero-link").symlink_to("/dev/zero")
    for name, sidecar in (("wal-fifo.sqlite", "-wal"), ("hnsw-fifo.sqlite", ".hnsw")):
        Memory(folder / name, embedder="hash").close()
        os.mkfifo(folder / f"{name}{sidecar}")
    return folder


def draw_location(d: Any, folder: Path) -> Any:
    kind = d(LOCATION_KINDS)
    if kind == "new":
        return folder / f"new-{d(st.integers(0, 10**9))}.sqlite"
    if kind == "existing":
        return folder / "existing.sqlite"
    if kind == "memory":
        return ":memory:"
    if kind == "url":
        return d(st.sampled_from(["sqlite://", "sqlite:///", "bogus://x", "://", "sqlite:///{f}/u.sqlite"])).format(f=folder)
    if kind == "special":
        return d(st.sampled_from(SPECIAL_PATHS)).format(folder=folder)
    if kind == "text":
        return f"{folder}/{d(PATH_TEXT)}"
    return inside(folder, d(ANYTHING))


def inside(folder: Path, value: Any) -> Any:
    """A drawn text as a path in the scratch folder (a text starting with "/" made files at the
    root of the disk); any other value as drawn."""
    return f"{folder}/{value}" if isinstance(value, str) else value


def construct_and_search(folder: Path, d: Any) -> None:
    """Memory(...) with a drawn location and options; when it opens, one search and close."""
    options = {name: d(ANY_VALUE) for name in d(st.lists(MEMORY_OPTIONS, max_size=3, unique=True))}
    options.setdefault("embedder", "hash")  # a drawn name of a real model would load it: minutes
    if "embed_cache" in options:
        options["embed_cache"] = inside(folder, options["embed_cache"])
    location = draw_location(d, folder)
    with contextlib.chdir(folder):  # a drawn relative path (embed_cache) lands in the scratch folder
        memory = Memory(location, **options)
        try:
            memory.search("cat", app=APP, k=3)
        finally:
            memory.close()


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    folder = special_files(tmp_path_factory.mktemp("memory_init"))
    Memory(folder / "existing.sqlite", embedder="hash").add_fact("The user's cat is called Admon.", app=APP)
    return folder


@settings(max_examples=50, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(data=st.data())
@pytest.mark.slow
def test_memory_constructor_raises_only_diarist_errors(scratch, data):
    try:
        construct_and_search(scratch, data.draw)
    except DiaristError:
        pass


def _foreign_call(fuzz: Fuzz, folder: Path, method: str, d: Any) -> None:
    """One call of a method the first fuzz left out, with drawn arguments (a drawn relative
    backup path lands in the scratch folder, not in the current one)."""
    keys = fuzz.memory.keys
    with contextlib.chdir(folder):
        if method == "Memory(...)":
            construct_and_search(folder, d)
        elif method == "derive-then-search":
            fuzz.memory.derive(**{d(DERIVE_OPTIONS): d(ANY_VALUE)}).search(d(QUERIES), app=APP, k=3)
        elif method == "backup":
            fuzz.memory.backup(inside(folder, d(st.one_of(PATH_TEXT, ANYTHING))))
        elif method == "keys.check":
            keys.check(d(st.one_of(PATH_TEXT, ANYTHING)), d(st.one_of(APPS, PATH_TEXT)))
        elif method == "keys.list":
            keys.list(d(st.one_of(APPS, PATH_TEXT)))
        else:
            keys.revoke(d(st.one_of(IDS, PATH_TEXT, HUGE_INTS)))


@pytest.mark.heavy
def test_foreign_exceptions_heavy(tmp_path):
    """The issue's count, rerun: 5,249 fuzzed calls of backup, derive-then-search, Memory(...) and
    the key store; every exception must be diarist's (RELIABILITY.md, "Bad input")."""
    fuzz = Fuzz(tmp_path / "heavy.sqlite", strict=False)
    folder = special_files(tmp_path)
    methods = ["backup", "derive-then-search", "Memory(...)", "keys.check", "keys.list", "keys.revoke"]
    calls: Counter[str] = Counter()

    @settings(max_examples=5_249, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def run(data):
        method = data.draw(st.sampled_from(methods))
        calls[method] += 1
        try:
            _foreign_call(fuzz, folder, method, data.draw)
        except DiaristError:
            fuzz.diarist_errors += 1
        except Exception as exc:
            fuzz._record(fuzz.foreign, method, exc, (), {}, "not a DiaristError")

    try:
        run()
    finally:
        fuzz.calls = sum(calls.values())
        report = fuzz.report() + "\n  by method: " + ", ".join(f"{m} {calls[m]}" for m in methods)
        print("\nForeign-exception fuzz:", report, file=sys.stderr)
        fuzz.close()
    assert not fuzz.foreign, report
