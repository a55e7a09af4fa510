"""The MCP server driven by a real MCP client session, over stdio and over streamable HTTP."""

from __future__ import annotations

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from test_server_support import DIARIST, ServerThread, create_key, diarist_env

from diarist.memory import Memory
from diarist.server.mcp_server import http_app


def text_of(result) -> str:
    assert not result.is_error, result.content
    return "\n".join(part.text for part in result.content if getattr(part, "type", None) == "text")


async def remember_then_recall(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == {"remember", "correct", "recall", "context", "memories", "show", "forget"}
    assert all(len(t.description or "") > 80 for t in tools.values())  # descriptions an agent can act on
    assert "app" not in tools["recall"].input_schema.get("properties", {})  # the app is fixed, not a parameter

    stored = text_of(await client.call_tool("remember", {"text": "The user's cat is called Admon.", "date": "2024-05-01"}))
    memory_id = stored.removeprefix("Remembered as ").rstrip(".")
    cello = text_of(await client.call_tool("remember", {"text": "The user plays the cello on Sundays."}))
    cello_id = cello.removeprefix("Remembered as ").rstrip(".")

    recalled = text_of(await client.call_tool("recall", {"query": "What is my cat called?", "k": 2}))
    assert recalled.startswith("1. id " + memory_id) and "Admon" in recalled and "2024-05-01" in recalled
    explained = text_of(await client.call_tool("recall", {"query": "What is my cat called?", "k": 1, "explain": True}))
    assert "why: dense #" in explained and "matched: cat" in explained and "stages:" in explained

    block = text_of(await client.call_tool("context", {"query": "cat name", "budget_tokens": 300}))
    assert "Admon" in block and "past records" in block

    listed = text_of(await client.call_tool("memories", {"kind": "fact", "limit": 1}))
    assert listed.startswith(cello_id + " · ") and "offset 1" in listed  # newest first
    older = text_of(await client.call_tool("memories", {"kind": "fact", "limit": 1, "offset": 1}))
    assert older.startswith(memory_id + " · 2024-05-01")
    shown = text_of(await client.call_tool("show", {"memory_id": memory_id}))
    assert "The user's cat is called Admon." in shown and "2024-05-01" in shown
    missing = await client.call_tool("show", {"memory_id": "no-such-id"})  # an error reaches the agent
    assert missing.is_error and "no session or fact 'no-such-id'" in missing.content[0].text
    bad = await client.call_tool("memories", {"kind": "bogus"})
    assert bad.is_error and "unknown kind 'bogus'" in bad.content[0].text

    assert text_of(await client.call_tool("forget", {"memory_id": memory_id})) == f"Forgot {memory_id}."
    assert "Admon" not in text_of(await client.call_tool("recall", {"query": "cat called Admon"}))
    assert "No memory" in text_of(await client.call_tool("forget", {"memory_id": memory_id}))


@pytest.mark.slow
def test_stdio_remember_then_recall(tmp_path):
    db = tmp_path / "mcp.sqlite"
    params = StdioServerParameters(
        command=DIARIST, args=["mcp", "--db", str(db), "--app", "agent", "--embedder", "hash"], env=diarist_env()
    )

    async def main():
        async with Client(params, read_timeout_seconds=60) as client:
            await remember_then_recall(client)

    anyio.run(main)
    # scoped to its app: the memories went to 'agent' and nowhere else
    memory = Memory(db, embedder="hash")
    assert memory.apps() == ["agent"]
    memory.close()


@pytest.mark.slow
def test_streamable_http_remember_then_recall_with_key(tmp_path):
    db = tmp_path / "mcp.sqlite"
    memory = Memory(db, embedder="hash")
    memory.add_fact("Another app's cat is called Zorro.", app="other")
    key, other_key = create_key(db, "agent"), create_key(db, "other")

    async def session(token: str | None):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        http = httpx2.AsyncClient(headers=headers, timeout=60)
        return Client(streamable_http_client(f"{srv.url}/mcp", http_client=http), read_timeout_seconds=60), http

    async def main():
        client, http = await session(key)
        async with http, client:
            await remember_then_recall(client)
            assert "Zorro" not in text_of(await client.call_tool("recall", {"query": "Zorro cat"}))
        for token in (None, other_key, "vst_wrong"):
            refused = httpx2.post(f"{srv.url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                  headers={"Authorization": f"Bearer {token}"} if token else {})
            assert refused.status_code in (401, 403), refused.text

    with ServerThread(http_app(memory, "agent")) as srv:
        anyio.run(main)
    memory.close()


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_mcp_command_help(transport):
    import subprocess

    out = subprocess.run([DIARIST, "mcp", "--help"], capture_output=True, text=True, env=diarist_env())
    assert out.returncode == 0 and "--app" in out.stdout and transport in out.stdout
