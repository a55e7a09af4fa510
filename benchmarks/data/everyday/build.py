"""Write the everyday set's files from its sources (source/*.py), or check that they match.

    python benchmarks/data/everyday/build.py          # (re)write the files
    python benchmarks/data/everyday/build.py --check  # exit 1 if a committed file differs

What it writes, next to this script (README.md says what each holds):

- ``exports/<person>/conversations.json``: a Claude.ai data export (the format
  ``diarist import`` reads) with the person's long unrelated conversations and the facts they
  stated in a short conversation of their own;
- ``exports/<person>/saved_facts.json``: the facts an agent saved for them (``Memory.add_fact``);
- ``vault/``: an Obsidian-style vault of notes (Markdown with YAML front matter);
- ``questions.jsonl``: one question a line, with its haystack, kind, gold, older entries and half.

Everything is deterministic: ids are UUIDs derived from readable names (uuid5), and a
question's half (dev or heldout) is a hash of its group (a fact, or a note), so all phrasings of
one fact, and every question about one note, fall in the same half.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import sys
import uuid
from datetime import datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "source"))

from conversations import CONVERSATIONS  # noqa: E402
from facts import ASKED, CHAT_NAMES, HAYSTACKS  # noqa: E402
from notes import NOTE_QUESTIONS, NOTES, NOTES_OFFTOPIC  # noqa: E402

NAMESPACE = uuid.UUID("6f1d3a52-8f0e-4c7b-9a51-3c2e0d9b7e41")  # this set's own namespace
VAULT = "vault"
NOTES_HAYSTACK = "notes"


def uid(name: str) -> str:
    return str(uuid.uuid5(NAMESPACE, name))


def half(group: str) -> str:
    return "dev" if hashlib.sha256(group.encode()).digest()[0] % 2 == 0 else "heldout"


def expand(pattern: str) -> list[str]:
    """``[a|b]`` alternatives, every combination, spaces tidied."""
    parts = re.split(r"(\[[^\]]*\])", pattern)
    choices = [p[1:-1].split("|") if p.startswith("[") else [p] for p in parts]
    return [" ".join("".join(c).split()).replace(" ?", "?") for c in itertools.product(*choices)]


def _messages(turns: list[str], start: datetime, conv: str) -> list[dict]:
    out = []
    for i, text in enumerate(turns):
        at = (start + timedelta(minutes=3 * i)).strftime("%Y-%m-%dT%H:%M:%S.000000Z")
        sender = "human" if i % 2 == 0 else "assistant"
        out.append({"uuid": uid(f"{conv}/{i}"), "text": text, "sender": sender, "created_at": at, "updated_at": at,
                    "content": [{"type": "text", "text": text}], "attachments": [], "files": []})
    return out


def conversation(uuid_: str, name: str, turns: list[str], date: str, hour: int) -> dict:
    start = datetime.fromisoformat(date).replace(hour=hour, minute=12)
    messages = _messages(turns, start, uuid_)
    return {"uuid": uuid_, "name": name, "summary": "", "created_at": messages[0]["created_at"],
            "updated_at": messages[-1]["created_at"], "chat_messages": messages}


def conversation_dates(n: int, person: int) -> list[str]:
    """Unrelated conversations spread over 2024-03 .. 2026-02, a different spread per person."""
    first = datetime(2024, 3, 5) + timedelta(days=9 * person)
    step = (datetime(2026, 2, 20) - first) / max(n - 1, 1)
    return [(first + step * i).strftime("%Y-%m-%d") for i in range(n)]


def person_files(index: int, hay: dict) -> tuple[dict, dict, list[dict]]:
    """(conversations.json, saved_facts.json, question rows) of one person."""
    by_id = {c["id"]: c for c in CONVERSATIONS}
    convs, ids = [], {}
    for date, cid in zip(conversation_dates(len(hay["conversations"]), index), hay["conversations"]):
        c = by_id[cid]
        convs.append(conversation(uid(f"{hay['id']}/{cid}"), c["name"], c["turns"], date, 9 + len(convs) % 10))
    saved = []
    for fact in hay["facts"]:
        if fact["kind"] == "chat":
            ids[fact["id"]] = uid(f"{hay['id']}/{fact['id']}")
            turns = [fact["text"], fact["reply"]]
            convs.append(conversation(ids[fact["id"]], CHAT_NAMES[fact["id"]], turns, fact["date"], 20))
        else:
            ids[fact["id"]] = f"fact-{fact['id']}"
            saved.append({"id": ids[fact["id"]], "text": fact["text"], "date": fact["date"]})
    convs.sort(key=lambda c: c["created_at"])
    rows = []
    for group in hay["questions"]:
        kind = "changed" if group.get("older") else "fact"
        for n, text in enumerate(q for a in group["asks"] for q in expand(a)):
            rows.append({"id": f"{group['id']}-{n + 1:02d}", "haystack": hay["id"], "kind": kind, "group": group["id"],
                         "question": text, "gold": [ids[group["gold"]]], "older": [ids[o] for o in group.get("older", [])],
                         "half": half(group["id"]), "asked": ASKED})
    for n, text in enumerate(hay["offtopic"]):
        rows.append({"id": f"{hay['id']}-offtopic-{n + 1:02d}", "haystack": hay["id"], "kind": "offtopic",
                     "group": f"offtopic:{text}", "question": text, "gold": [], "older": [],
                     "half": half(f"offtopic:{text}"), "asked": ASKED})
    return {"conversations": convs}, {"facts": saved}, rows


def note_text(note: dict) -> str:
    lines = []
    if note["front"]:
        lines.append("---")
        for key, value in note["front"].items():
            if isinstance(value, list):
                lines.append(f"{key}:")
                lines += [f"  - {v}" for v in value]
            else:
                lines.append(f"{key}: {value}")
        lines += ["---", ""]
    return "\n".join(lines) + note["body"].rstrip() + "\n"


def note_title(note: dict) -> str:
    return note["front"].get("title") or note["path"].rsplit("/", 1)[-1].removesuffix(".md")


def note_rows() -> list[dict]:
    rows = []
    for note in NOTES:
        rows.append({"id": f"title-{note['path'].removesuffix('.md')}", "haystack": NOTES_HAYSTACK, "kind": "title",
                     "group": note["path"], "question": note_title(note), "gold": [note["path"]], "older": [],
                     "half": half(note["path"]), "asked": ASKED})
    paths = {n["path"] for n in NOTES}
    for q in NOTE_QUESTIONS:
        if q["gold"] not in paths:
            raise ValueError(f"{q['id']}: no note {q['gold']}")
        rows.append({"id": q["id"], "haystack": NOTES_HAYSTACK, "kind": q["kind"], "group": q["gold"],
                     "question": q["text"], "gold": [q["gold"]], "older": [], "half": half(q["gold"]), "asked": ASKED})
    for n, text in enumerate(NOTES_OFFTOPIC):
        rows.append({"id": f"notes-offtopic-{n + 1:02d}", "haystack": NOTES_HAYSTACK, "kind": "offtopic",
                     "group": f"offtopic:{text}", "question": text, "gold": [], "older": [],
                     "half": half(f"offtopic:{text}"), "asked": ASKED})
    return rows


def files() -> dict[str, str]:
    """Every file of the set: path relative to this folder -> text."""
    out: dict[str, str] = {}
    rows: list[dict] = []
    for i, hay in enumerate(HAYSTACKS):
        convs, saved, person_rows = person_files(i, hay)
        out[f"exports/{hay['id']}/conversations.json"] = json.dumps(convs["conversations"], indent=1,
                                                                     ensure_ascii=False) + "\n"
        out[f"exports/{hay['id']}/saved_facts.json"] = json.dumps(saved, indent=1, ensure_ascii=False) + "\n"
        rows += person_rows
    for note in NOTES:
        out[f"{VAULT}/{note['path']}"] = note_text(note)
    rows += note_rows()
    ids = [r["id"] for r in rows]
    if len(ids) != len(set(ids)):
        raise ValueError("question ids repeat")
    out["questions.jsonl"] = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    return out


def main(argv: list[str]) -> int:
    check = "--check" in argv
    wanted = files()
    bad = []
    for rel, text in wanted.items():
        path = HERE / rel
        if check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                bad.append(rel)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    stray = [p.relative_to(HERE).as_posix() for folder in ("exports", VAULT) if (HERE / folder).exists()
             for p in (HERE / folder).rglob("*") if p.is_file() and p.relative_to(HERE).as_posix() not in wanted]
    if check:
        for rel in bad + stray:
            print(f"differs from its source: {rel}" if rel in bad else f"not written by build.py: {rel}")
        return 1 if bad or stray else 0
    for rel in stray:
        (HERE / rel).unlink()
    print(f"wrote {len(wanted)} files")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
