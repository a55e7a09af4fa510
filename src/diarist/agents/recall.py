"""The hooks' answers worked out in this process, when no resident process is up: the memory is
opened (and the model loaded) here, once per hook run. Also the wording both paths share: the
block of remembered facts a session starts with."""

from __future__ import annotations

from typing import Any

#: The facts a session starts with: the latest remembered, within this many characters.
FACTS_LIMIT = 20
FACTS_MAX_CHARS = 2000
FACTS_HEADER = ("What the user asked you to remember (diarist long-term memory, the latest remembered first; "
                "what the user says now wins over these):")


def facts_block(facts: list[dict[str, Any]]) -> str:
    """The facts, the latest remembered first, one line each, cut at FACTS_MAX_CHARS; "" when there are none."""
    lines, size = [], len(FACTS_HEADER)
    for fact in facts:
        text = " ".join(str(fact.get("text") or "").split())
        if not text:
            continue
        date = str(fact.get("date") or "")[:10]
        line = f"- {text}" + (f" ({date})" if date else "")
        if size + len(line) + 1 > FACTS_MAX_CHARS:
            break
        lines.append(line)
        size += len(line) + 1
    return "\n".join([FACTS_HEADER, *lines]) if lines else ""


def open_memory(location: str) -> Any:
    from ..config import lexical_fusion_enabled
    from ..memory import Memory

    return Memory(location, lexical_fusion=lexical_fusion_enabled(), create=False)


def context(location: str, app: str, prompt: str, *, budget_tokens: int, trim: str = "auto") -> str:
    memory = open_memory(location)
    try:
        return str(memory.context(prompt, app=app, budget_tokens=budget_tokens, trim=trim))
    finally:
        memory.close()


def facts(location: str, app: str, *, limit: int = FACTS_LIMIT) -> list[dict[str, Any]]:
    from ..errors import UnknownApp

    memory = open_memory(location)
    try:
        try:
            rows = memory.list(app=app, kind="fact", limit=limit)
        except UnknownApp:
            return []
        return [memory.get(row["fact_id"], app=app, kind="fact") for row in rows]
    finally:
        memory.close()
