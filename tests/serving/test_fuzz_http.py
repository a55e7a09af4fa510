"""Property-based fuzzing of the HTTP API over real sockets: whatever the body, path or query,
the server answers with JSON and never a 500 (a bad request is a 4xx naming the field).

Bodies are generated as Python values (text with lone surrogates, NaN and infinities, huge
numbers, deep nesting, wrong types) and written with ``json.dumps(ensure_ascii=True)``, so a
lone surrogate travels as the escape ``\\ud800`` (what a JavaScript client sends), or as raw
bytes (invalid UTF-8, truncated JSON, 100,000-deep nesting). ``tests/serving/test_server_schemathesis.py``
drives the OpenAPI schema with schemathesis; ``test_schemathesis_heavy`` here runs it longer.

Finding this guards (the old build): ``POST /context`` with a lone surrogate in ``messages``
answered 500 (the messages are sent back, and the response could not be encoded).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from typing import Any
from urllib.parse import quote_from_bytes

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_server_support import ServerThread

from diarist.keys import KeyStore
from diarist.memory import Memory
from diarist.server.app import create_app

APP = "fuzz"

SURROGATE = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
ANY_TEXT = st.lists(st.one_of(st.characters(), SURROGATE, st.sampled_from(["\x00", "\n", "é", "😀", '"'])),
                    max_size=20).map("".join)
WORDS = st.lists(st.sampled_from(["cat", "Admon", "garden", "river", "Paris", "coffee", "yesterday"]),
                 min_size=1, max_size=6).map(" ".join)
TEXT = st.one_of(WORDS, WORDS, ANY_TEXT, st.just(""), st.just("   "))
NUMBER = st.one_of(st.integers(), st.integers(min_value=-(10**30), max_value=10**30),
                   st.floats(allow_nan=True, allow_infinity=True))
SCALAR = st.one_of(st.none(), st.booleans(), NUMBER, TEXT)
JSON = st.recursive(SCALAR, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ANY_TEXT, inner, max_size=3),
                    max_leaves=8)
DATE = st.one_of(st.none(), st.sampled_from(["2024-05-01", "2024-05-01T14:30:00Z", "yesterday", "9999-99-99", ""]),
                 TEXT, NUMBER, JSON)


def _nested(depth: int) -> Any:
    out: Any = 1
    for _ in range(depth):
        out = {"d": out}
    return out


METADATA = st.one_of(st.just({}), st.dictionaries(ANY_TEXT, JSON, max_size=3), JSON,
                     st.builds(lambda: _nested(40)), st.builds(lambda: {"big": "x" * 70_000}),
                     st.just({"v": float("nan")}))
ROLE = st.one_of(st.sampled_from(["user", "assistant", "system", "tool"]), TEXT, JSON)
MESSAGE = st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]), "content": WORDS}),
    st.fixed_dictionaries({"role": ROLE, "content": TEXT | JSON}, optional={"time": DATE}),
    JSON,
)
MESSAGES = st.one_of(st.lists(MESSAGE, min_size=1, max_size=3), JSON)
SESSION = st.fixed_dictionaries(
    {"messages": MESSAGES},
    optional={"session_id": st.one_of(TEXT, JSON, st.just("x" * 300)), "date": DATE, "metadata": METADATA,
              "extra": JSON},
)
CHAT_PART = st.fixed_dictionaries({"type": st.sampled_from(["text", "image_url"]), "text": TEXT | JSON})
CHAT = st.lists(st.fixed_dictionaries(
    {"role": st.one_of(st.sampled_from(["user", "assistant", "system"]), TEXT),
     "content": st.one_of(TEXT, st.lists(CHAT_PART, max_size=2), st.none(), JSON)},
    optional={"name": TEXT, "tool_calls": JSON}), max_size=4)
K = st.one_of(st.integers(min_value=1, max_value=100), st.integers(), NUMBER, TEXT, JSON)

BODIES = {
    "sessions": SESSION | JSON,
    "sessions/batch": st.fixed_dictionaries({"sessions": st.lists(SESSION, max_size=3) | JSON}) | JSON,
    "messages": st.fixed_dictionaries({"messages": MESSAGES}, optional={"date": DATE}) | JSON,
    "facts": st.fixed_dictionaries({"text": TEXT | JSON}, optional={"fact_id": TEXT | JSON, "date": DATE,
                                                                    "metadata": METADATA}) | JSON,
    "search": st.fixed_dictionaries({"query": TEXT | JSON}, optional={"k": K, "previous": TEXT | JSON}) | JSON,
    "context": st.fixed_dictionaries({}, optional={
        "query": TEXT | JSON, "messages": CHAT | JSON, "previous": TEXT, "budget_tokens": K, "k": K,
        "order": st.sampled_from(["date", "relevance", "best"]) | JSON}) | JSON,
}

RAW_BODIES = st.one_of(
    st.binary(max_size=64),
    st.sampled_from([
        b"", b"{", b"[", b"null", b"NaN", b'"\xff"', b'{"query": "caf\xe9"}', b"\xef\xbb\xbf{}",
        b'{"query": ' + b"9" * 5000 + b"}", b"[" * 100_000 + b"]" * 100_000,
        b'{"a":' * 100_000 + b"1" + b"}" * 100_000, b'{"query": "\\ud800"}', b'{"query": "x", "query": 5}',
    ]),
)
SEGMENT = st.one_of(st.sampled_from(["s1", "f1", "seed", "nope"]), st.binary(min_size=1, max_size=12).map(
    lambda b: quote_from_bytes(b, safe="")), st.sampled_from(["%ED%A0%80", "%ff", "%00", "x" * 300, "%2F", ".."]))


@st.composite
def requests(draw) -> tuple[str, str, dict[str, str], bytes | None]:
    """(method, path with query, headers, body)."""
    app = APP if draw(st.integers(0, 7)) else draw(SEGMENT)  # mostly the key's own app: past the 403 wall
    base = f"/v1/apps/{app}"
    route = draw(st.sampled_from([
        "sessions", "sessions/batch", "messages", "facts", "search", "context", "list", "get", "delete",
        "stats", "health", "delete_app",
    ]))
    headers = {"content-type": draw(st.sampled_from(["application/json"] * 6 + ["text/plain", "application/x+json"]))}
    body = None
    if route in BODIES:
        if draw(st.integers(0, 5)) == 0:
            body = draw(RAW_BODIES)
        else:
            body = json.dumps(draw(BODIES[route]), ensure_ascii=True, allow_nan=True).encode()
    if route == "messages":
        method, path = "POST", f"{base}/sessions/{draw(SEGMENT)}/messages"
    elif route in BODIES:
        method, path = "POST", f"{base}/{route}"
    elif route == "list":
        kind = draw(st.sampled_from(["sessions", "facts"]))
        query = draw(st.sampled_from(["", "?limit=2", "?limit=0", "?offset=-1", "?limit=abc",
                                      "?limit=99999999999999999999", "?offset=1e3", "?limit=%ff"]))
        method, path = "GET", f"{base}/{kind}{query}"
    elif route in ("get", "delete"):
        kind = draw(st.sampled_from(["sessions", "facts"]))
        method, path = ("GET" if route == "get" else "DELETE"), f"{base}/{kind}/{draw(SEGMENT)}"
    elif route == "stats":
        method, path = "GET", f"{base}/stats"
    elif route == "delete_app":
        method, path = "DELETE", f"/v1/apps/{draw(SEGMENT)}?confirm={draw(SEGMENT)}"  # never the fuzzed app
    else:
        method, path = "GET", "/health"
    return method, path, headers, body


class HttpFuzz:
    def __init__(self, url: str, key: str, strict: bool):
        self.client = httpx.Client(base_url=url, timeout=60)
        self.auth = {"Authorization": f"Bearer {key}"}
        self.strict = strict
        self.calls = 0
        self.statuses: Counter[int] = Counter()
        self.bad: Counter[str] = Counter()
        self.examples: dict[str, str] = {}

    def send(self, method: str, path: str, headers: dict[str, str], body: bytes | None) -> httpx.Response:
        self.calls += 1
        response = self.client.request(method, path, headers={**self.auth, **headers}, content=body)
        self.statuses[response.status_code] += 1
        problem = self._problem(response)
        if problem:
            key = f"{method} {path.split('?')[0].rsplit('/', 1)[-1][:20]}: {problem}"
            self.bad[key] += 1
            self.examples.setdefault(key, f"{(body or b'')[:200]!r} -> {response.text[:200]}")
            if self.strict:
                raise AssertionError(f"{method} {path} {problem}: {(body or b'')[:300]!r} -> {response.text[:300]}")
        return response

    @staticmethod
    def _problem(response: httpx.Response) -> str | None:
        if response.status_code == 503 and response.request.url.path == "/health":
            # the health check reporting failing retrieval (a documented answer), as JSON
            return None if response.json().get("status") == "failing" else "a 503 that is no health report"
        if response.status_code >= 500:
            return f"status {response.status_code}"
        if 300 <= response.status_code < 400:  # e.g. a trailing-slash redirect (a %2F segment)
            return None
        if not response.headers.get("content-type", "").startswith("application/json"):
            return "not JSON"
        try:
            data = response.json()
        except ValueError:
            return "invalid JSON body"
        if response.status_code >= 400:
            error = data.get("error") if isinstance(data, dict) else None
            if not isinstance(error, dict) or set(error) != {"status", "code", "message"}:
                return "error body without status, code and message"
            if error["status"] != response.status_code or "internal" in error["message"]:
                return "error body does not match"
        return None

    def report(self) -> str:
        lines = [f"{self.calls} requests, statuses {dict(sorted(self.statuses.items()))}, "
                 f"{sum(self.bad.values())} bad answers (5xx, non-JSON or malformed error bodies)"]
        for key, n in self.bad.most_common():
            lines.append(f"  {n:5d}  {key}  e.g. {self.examples[key]}")
        return "\n".join(lines)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    memory = Memory(tmp_path_factory.mktemp("fuzz_http") / "fuzz.sqlite", embedder="hash")
    key = KeyStore(memory.store).create(APP)[0]
    memory.add_session([{"role": "user", "content": "My cat is called Admon."}], app=APP, session_id="seed")
    memory.add_fact("The user drinks coffee.", app=APP, fact_id="f1")
    with ServerThread(create_app(memory, max_body_bytes=512 * 1024)) as srv:
        srv.key = key
        yield srv
    memory.close()


@pytest.fixture(scope="module")
def fuzz(server):
    f = HttpFuzz(server.url, server.key, strict=True)
    yield f
    f.client.close()


@settings(max_examples=300, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(request=requests())
@pytest.mark.slow
def test_no_request_gets_a_500_or_a_non_json_answer(fuzz, request):
    fuzz.send(*request)


CONTEXT_SURROGATES = [
    {"messages": [{"role": "user", "content": "what is my cat called? \ud800"}]},
    {"messages": [{"role": "system", "content": "be brief \udfff"}, {"role": "user", "content": "my cat?"}]},
    {"messages": [{"role": "user", "content": [{"type": "text", "text": "cat \udc00"}]}]},
    {"messages": [{"role": "user", "content": "cat", "name": "\ud83d"}]},
    {"messages": [{"role": "user", "content": "cat", "tool_calls": [{"\ud800": 1}]}]},
    {"query": "cat \ud800"},
    {"query": "cat", "previous": "\udbff"},
]


@pytest.mark.parametrize("body", CONTEXT_SURROGATES)
def test_a_lone_surrogate_in_context_is_a_422(fuzz, body):
    """The old build answered 500: the messages are sent back, and could not be encoded."""
    response = fuzz.send("POST", f"/v1/apps/{APP}/context", {"content-type": "application/json"},
                         json.dumps(body).encode())
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "invalid_input"


@pytest.mark.parametrize("body,expected", [
    (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    (b'{"text": ' + b"9" * 5000 + b"}", "too many digits"),
    (b'{"text": "caf\xe9"}', "not valid UTF-8"),
    (b'{"text": ', "JSON decode error"),
])
def test_unreadable_bodies_say_why(fuzz, body, expected):
    response = fuzz.send("POST", f"/v1/apps/{APP}/facts", {"content-type": "application/json"}, body)
    assert response.status_code == 422
    assert expected in response.json()["error"]["message"]


def test_a_good_chat_still_gets_its_block(fuzz):
    body = {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is my cat called?"}]}
    response = fuzz.send("POST", f"/v1/apps/{APP}/context", {"content-type": "application/json"}, json.dumps(body).encode())
    assert response.status_code == 200
    data = response.json()
    assert "Admon" in data["context"] and data["messages"][-1]["content"].endswith("What is my cat called?")


@pytest.mark.heavy
def test_fuzz_http_heavy(server):
    """Many more requests, counted rather than stopped at the first: the figures in RELIABILITY.md."""
    fuzz = HttpFuzz(server.url, server.key, strict=False)

    @settings(max_examples=6000, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(request=requests())
    def run(request):
        fuzz.send(*request)

    try:
        run()
    finally:
        report = fuzz.report()
        print("\nHTTP fuzz:", report, file=sys.stderr)
        fuzz.client.close()
    assert not fuzz.bad, report


@pytest.mark.heavy
def test_schemathesis_heavy(server):
    """The schema-driven run of test_server_schemathesis.py, 100 examples per operation and mode."""
    import schemathesis
    from hypothesis import Phase
    from hypothesis.errors import Unsatisfiable
    from schemathesis import GenerationMode
    from schemathesis.checks import not_a_server_error

    schema = schemathesis.openapi.from_url(f"{server.url}/openapi.json")
    auth = {"Authorization": f"Bearer {server.key}"}
    calls = Counter()
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
        for result in schema.get_all_operations():
            operation = result.ok()
            has_app = any(p.name == "app" for p in operation.path_parameters)
            strategy = operation.as_strategy(mode, path_parameters={"app": APP} if has_app else None)

            @settings(max_examples=100, deadline=None, derandomize=True, database=None,
                      suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate])
            @given(case=strategy)
            def run(case):
                calls[mode.name] += 1
                case.call_and_validate(headers=auth, checks=[not_a_server_error], timeout=60)

            try:
                run()
            except Unsatisfiable:
                pass
    print(f"\nschemathesis: {dict(calls)} calls, no server error", file=sys.stderr)


# -- the MCP door ------------------------------------------------------------------------------

MCP_BAD_CALLS = [
    ("remember", {"text": "cat \ud800"}, "not valid Unicode"),
    ("remember", {"text": "x", "date": "not a date"}, "not in a known format"),
    ("remember", {"text": "   "}, "non-empty string"),
    ("recall", {"query": "\udfff"}, "not valid Unicode"),
    ("context", {"query": "  "}, "query is empty"),
    ("forget", {"memory_id": "\ud800"}, "not valid Unicode"),
    ("forget", {"memory_id": "x" * 1000}, "1 to 256 characters"),
]


def test_mcp_tools_answer_bad_input_with_its_message(tmp_path):
    """The SDK hides the text of any exception it does not know (a "crash"): a DiaristError is
    re-raised as a ToolError, so the agent reads what was wrong."""
    import anyio
    from mcp import Client

    from diarist.server.mcp_server import build_mcp

    memory = Memory(tmp_path / "mcp.sqlite", embedder="hash")
    memory.add_fact("The user drinks coffee.", app="agent", fact_id="f1")

    async def main():
        async with Client(build_mcp(memory, "agent")) as client:
            for tool, args, expected in MCP_BAD_CALLS:
                result = await client.call_tool(tool, args)
                text = " ".join(part.text for part in result.content)
                assert result.is_error and expected in text, (tool, args, text)
            ok = await client.call_tool("recall", {"query": "coffee"})
            assert not ok.is_error

    try:
        anyio.run(main)
    finally:
        memory.close()
