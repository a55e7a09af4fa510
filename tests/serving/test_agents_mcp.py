"""What an agent writes through the MCP tools: it stores a fact (`remember`), corrects it
(`correct`: the whole new statement, the old version kept in the fact's history), and forgets it
(`forget`); a correction of a fact of another app, or of a session, is refused."""

from __future__ import annotations

import anyio
from mcp import Client

from diarist.memory import Memory
from diarist.server.mcp_server import build_mcp


def _text(result) -> str:
    return "\n".join(part.text for part in result.content if getattr(part, "type", None) == "text")


def test_store_correct_and_forget_a_fact(tmp_path):
    memory = Memory(tmp_path / "m.sqlite", embedder="hash", create=True)
    memory.add_fact("Another app's cat is called Zorro.", app="other", fact_id="zorro")
    memory.add_session([{"role": "user", "content": "hello"}], app="agent", session_id="s1")

    async def main():
        async with Client(build_mcp(memory, "agent")) as client:
            stored = _text(await client.call_tool("remember", {"text": "The user's cat is called Admon."}))
            fact_id = stored.removeprefix("Remembered as ").rstrip(".")
            fixed = await client.call_tool("correct", {"memory_id": fact_id, "text": "The user's cat is called Admon; she is 4."})
            assert not fixed.is_error and _text(fixed) == f"Corrected {fact_id}; its previous version is kept."
            again = _text(await client.call_tool("correct", {"memory_id": fact_id, "text": "The user's cat is called Admon; she is 4."}))
            assert again == f"{fact_id} already says that."
            recalled = _text(await client.call_tool("recall", {"query": "cat Admon"}))
            assert "she is 4" in recalled
            assert [v["text"] for v in memory.history(fact_id, app="agent")] == ["The user's cat is called Admon."]
            for other in ("zorro", "s1", "no-such-id"):  # another app's fact, a session, nothing
                refused = await client.call_tool("correct", {"memory_id": other, "text": "changed"})
                assert "No remembered fact" in _text(refused)
            assert _text(await client.call_tool("forget", {"memory_id": fact_id})) == f"Forgot {fact_id}."

    anyio.run(main)
    assert [v["text"] for v in memory.history("zorro", app="other")] == []
    assert memory.get("zorro", app="other")["text"] == "Another app's cat is called Zorro."
    assert memory.list(app="agent", kind="fact") == []
    memory.close()
