"""Export files in the shapes people's exports have, built in the tests (never copied from
anyone's): shared by the importer and sync tests."""

from __future__ import annotations


def chatgpt_conversation(cid: str, texts: list[str], updated: float) -> dict:
    """One ChatGPT conversation (its ``mapping`` tree, one branch), user and assistant turns
    alternating, last updated at ``updated`` (epoch seconds)."""
    mapping: dict[str, dict] = {}
    parent = None
    for n, text in enumerate(texts):
        node = f"{cid}-{n}"
        role = "user" if n % 2 == 0 else "assistant"
        mapping[node] = {"id": node, "parent": parent, "children": [],
                         "message": {"author": {"role": role}, "create_time": updated - 100 + n,
                                     "content": {"content_type": "text", "parts": [text]}}}
        if parent:
            mapping[parent]["children"].append(node)
        parent = node
    return {"id": cid, "title": cid, "create_time": updated - 1000, "update_time": updated,
            "current_node": parent, "mapping": mapping}
