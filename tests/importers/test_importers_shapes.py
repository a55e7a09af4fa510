"""Export shapes met in real exports and in the fixtures of other exporter and viewer projects
(issue 28 item 3), each written here by hand: a ChatGPT canvas document, a Claude.ai voice
note, Claude.ai blocks of a kind diarist does not know, and a Claude Code folder as Claude Code
writes it now (progress lines, a sub-agent's file, a compacted session)."""

from __future__ import annotations

import json
from pathlib import Path

from diarist.importers import read_all, read_sessions


def _contents(session) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in session.messages]


def _chatgpt_node(nid: str, parent: str | None, role: str, content: dict, recipient: str = "all") -> dict:
    return {"id": nid, "parent": parent, "children": [],
            "message": {"id": nid, "author": {"role": role, "name": "canmore.create_textdoc" if role == "tool" else None},
                        "content": content, "recipient": recipient, "create_time": 1.75e9, "metadata": {}}}


def test_chatgpt_canvas_document_is_kept_whole(tmp_path):
    essay = "Porto itinerary\n\n" + " ".join(f"Day {d}: walk the riverside and eat francesinha." for d in range(1, 40))
    doc = json.dumps({"name": "porto_trip", "type": "document", "content": essay})
    nodes = [
        _chatgpt_node("u1", None, "user", {"content_type": "text", "parts": ["Draft my Porto trip in a canvas"]}),
        _chatgpt_node("a1", "u1", "assistant", {"content_type": "code", "language": "json", "text": doc},
                      recipient="canmore.create_textdoc"),
        _chatgpt_node("t1", "a1", "tool", {"content_type": "text", "parts": ["Successfully created text document"]}),
        _chatgpt_node("a2", "t1", "assistant", {"content_type": "code", "language": "json",
                                                "text": json.dumps({"updates": [{"pattern": "Day 1", "replacement": "Day one"}]})},
                      recipient="canmore.update_textdoc"),
    ]
    export = [{"id": "conv-canvas", "title": "Porto", "create_time": 1.75e9, "current_node": "a2",
               "mapping": {n["id"]: n for n in nodes}}]
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(export))
    fmt, (session,) = read_sessions(path)
    assert fmt == "chatgpt"
    roles_texts = _contents(session)
    assert roles_texts[1] == ("assistant", "[canvas porto_trip]\n" + essay)  # whole, not cut at 200 characters
    assert roles_texts[2][0] == "tool" and "Successfully created" in roles_texts[2][1]
    assert roles_texts[3][0] == "tool" and roles_texts[3][1].startswith("called tool canmore.update_textdoc(")


def _claude_message(sender: str, content: list, text: str = "") -> dict:
    return {"uuid": f"m-{sender}-{len(content)}-{len(text)}", "sender": sender, "text": text, "content": content,
            "created_at": "2025-05-01T10:00:00Z", "attachments": [], "files": []}


def test_claude_ai_voice_note_and_unknown_blocks_keep_the_words(tmp_path):
    export = [{"uuid": "conv-voice", "name": "Garden", "created_at": "2025-05-01T10:00:00Z",
               "updated_at": "2025-05-01T10:05:00Z", "chat_messages": [
                   _claude_message("human", [{"type": "voice_note", "title": "Recording",
                                              "transcript": "When should I plant the tomato seedlings?"}]),
                   # a block kind diarist does not know, with the words in the message's text
                   _claude_message("assistant", [{"type": "rich_answer_v9", "payload": {"x": 1}}],
                                   text="Plant them after the last frost, mid-May here."),
                   # thinking only: nothing to keep (the text field repeats the thinking)
                   _claude_message("assistant", [{"type": "thinking", "thinking": "hmm"}], text="hmm"),
                   _claude_message("human", [{"type": "token_budget"}, {"type": "text", "text": "Thanks!"}]),
               ]}]
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(export))
    fmt, (session,) = read_sessions(path)
    assert fmt == "claude-ai"
    assert _contents(session) == [
        ("user", "When should I plant the tomato seedlings?"),
        ("assistant", "Plant them after the last frost, mid-May here."),
        ("user", "Thanks!"),
    ]


def _line(kind: str, uuid: str, content, sid: str = "sess-1", **extra) -> str:
    record = {"type": kind, "uuid": uuid, "sessionId": sid, "timestamp": "2025-06-01T09:00:00Z",
              "cwd": "/home/ana/src/kiln", "isSidechain": False, "message": {"role": kind, "content": content}}
    record.update(extra)
    return json.dumps(record)


def test_claude_code_folder_with_progress_lines_sub_agent_file_and_compaction(tmp_path):
    project = tmp_path / "projects" / "-home-ana-src-kiln"
    (project / "sess-1" / "subagents").mkdir(parents=True)
    lines = [
        json.dumps({"type": "queue-operation", "operation": "dequeue", "sessionId": "sess-1"}),
        _line("user", "u1", "Why does the kiln controller overshoot by 20 degrees?"),
        json.dumps({"type": "progress", "uuid": "p1", "sessionId": "sess-1", "data": {
            "type": "agent_progress", "message": {"type": "assistant", "message": {
                "role": "assistant", "content": [{"type": "text", "text": "sub-agent: reading pid.c"}]}}}}),
        _line("assistant", "a1", [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "pid.c"}}]),
        _line("user", "u2", [{"type": "tool_result", "tool_use_id": "t1", "content": "int kp = 40;"}],
              toolUseResult={"type": "text", "file": {"filePath": "pid.c", "content": "int kp = 40;"}}),
        _line("assistant", "a2", [{"type": "text", "text": "The proportional gain kp = 40 is too high."}]),
        json.dumps({"type": "system", "subtype": "compact_boundary", "uuid": "s1", "sessionId": "sess-1",
                    "content": "Conversation compacted"}),
        _line("user", "u3", "Summary: we found kp too high in pid.c.", isCompactSummary=True,
              isVisibleInTranscriptOnly=True),
    ]
    (project / "sess-1.jsonl").write_text("\n".join(lines) + "\n")
    agent = [_line("user", "x1", "Read pid.c and report the gains", isSidechain=True, agentId="a9"),
             _line("assistant", "x2", [{"type": "text", "text": "kp = 40"}], isSidechain=True, agentId="a9")]
    (project / "sess-1" / "subagents" / "agent-a9.jsonl").write_text("\n".join(agent) + "\n")

    imported = read_all(tmp_path / "projects")
    assert imported.format == "claude-code" and imported.files == 2
    (session,) = imported.sessions
    contents = _contents(session)
    assert contents[0] == ("user", "Why does the kiln controller overshoot by 20 degrees?")
    assert ("assistant", "The proportional gain kp = 40 is too high.") in contents
    assert ("system", "Summary: we found kp too high in pid.c.") in contents
    assert not any("sub-agent" in text for _, text in contents)  # progress lines are bookkeeping
    # the sub-agent's file holds only sidechain lines: read, nothing kept, and named with why
    assert [s for s in imported.skipped if "agent-a9" in s and "no message with text" in s]
