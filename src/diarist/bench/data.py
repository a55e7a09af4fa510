"""Benchmark files -> haystacks and questions, with gold sessions and evidence turns.

LongMemEval: each question is its own haystack (its ``haystack_sessions``). LoCoMo: each
conversation is one haystack, asked all of its questions. Sessions are built by the converters
of :mod:`diarist.importers`, so the benchmark indexes exactly what ``diarist ingest`` would.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..importers.json_records import load_json_records
from ..importers.locomo import locomo_sessions
from ..importers.longmemeval import longmemeval_sessions
from ..write.validate import SessionInput

EVIDENCE = re.compile(r"D(\d+):(\d+)")
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


@dataclass
class Question:
    qid: str
    qtype: str
    text: str
    date: str | None
    gold: list[str]  # evidence sessions (as the data gives them, kept if in the haystack)
    gold_user: list[str] | None  # official user-side rule (LongMemEval); None where n/a
    evidence_turns: dict[str, set[int]]  # session id -> indexes of evidence messages
    abstention: bool = False  # LongMemEval "_abs" / LoCoMo category 5 (adversarial)
    gold_dropped: list[str] = field(default_factory=list)  # evidence naming no haystack session


@dataclass
class Haystack:
    """Sessions indexed together, and the questions asked of them."""

    unit: str
    sessions: list[SessionInput]
    questions: list[Question]


def select(items: list[Any], limit: int | None, stride: int | None) -> list[Any]:
    """Every stride-th item (a spread over a file sorted by type), then the first limit of those."""
    chosen = items[:: stride] if stride and stride > 1 else items
    return chosen[:limit] if limit else chosen


def load_longmemeval(path: str, limit: int | None = None, stride: int | None = None) -> list[Haystack]:
    records = load_json_records(path)
    if not records or "haystack_sessions" not in records[0]:
        raise ValueError(f"{path}: not a LongMemEval file (no 'haystack_sessions')")
    out = []
    for record in select(records, limit, stride):
        sessions = list(longmemeval_sessions([record]))
        evidence: dict[str, set[int]] = {}
        user_side: set[str] = set()
        for sid, turns in zip(record["haystack_session_ids"], record["haystack_sessions"]):
            kept = [t for t in turns if t["content"].strip()]  # as longmemeval_sessions keeps them
            marks = {i for i, t in enumerate(kept) if t.get("has_answer")}
            if marks:
                evidence[sid] = marks
            if any(t.get("has_answer") and t["role"] == "user" for t in kept):
                user_side.add(sid)
        present = {s.session_id for s in sessions}
        gold = [s for s in record["answer_session_ids"] if s in present]
        question = Question(
            qid=str(record["question_id"]),
            qtype=record["question_type"],
            text=record["question"],
            date=record.get("question_date"),
            gold=gold,
            gold_user=[s for s in gold if s in user_side],
            evidence_turns={s: evidence.get(s, set()) for s in gold},
            abstention=str(record["question_id"]).endswith("_abs"),
            gold_dropped=[s for s in record["answer_session_ids"] if s not in present],
        )
        out.append(Haystack(question.qid, sessions, [question]))
    return out


def parse_evidence(evidence: Any) -> list[tuple[int, int]]:
    """"D<N>:<k>" ids -> (N, k); tolerates malformed ones ("D8:6; D9:17", "D30:05")."""
    items = evidence if isinstance(evidence, list) else [evidence]
    out: list[tuple[int, int]] = []
    for item in items:
        for m in EVIDENCE.finditer(str(item)):
            pair = (int(m.group(1)), int(m.group(2)))
            if pair not in out:
                out.append(pair)
    return out


def load_locomo(path: str, limit: int | None = None, stride: int | None = None) -> list[Haystack]:
    records = load_json_records(path)
    if not records or "conversation" not in records[0]:
        raise ValueError(f"{path}: not a LoCoMo file (no 'conversation')")
    out = []
    for record in select(records, limit, stride):
        sample = str(record["sample_id"])
        sessions = list(locomo_sessions(record))
        turn_of: dict[tuple[int, int], tuple[str, int]] = {}
        for s in sessions:
            for i, dia in enumerate(s.metadata.get("dia_ids", [])):
                for pair in parse_evidence(dia):
                    turn_of.setdefault(pair, (s.session_id, i))
        present = {s.session_id for s in sessions}
        # Questions are asked after the conversation: "now" is its last session's date.
        last_date = next((s.date for s in reversed(sessions) if s.date), None)
        questions = []
        for n, qa in enumerate(record["qa"]):
            pairs = parse_evidence(qa.get("evidence", []))
            named = list(dict.fromkeys(f"{sample}:session_{d}" for d, _ in pairs))
            turns: dict[str, set[int]] = {}
            for pair in pairs:
                if pair in turn_of:
                    sid, i = turn_of[pair]
                    turns.setdefault(sid, set()).add(i)
            category = int(qa.get("category", 0))
            gold = [s for s in named if s in present]
            questions.append(
                Question(
                    qid=f"{sample}:q{n}",
                    qtype=f"{category}-{LOCOMO_CATEGORIES.get(category, 'unknown')}",
                    text=str(qa["question"]),
                    date=last_date,
                    gold=gold,
                    gold_user=None,
                    evidence_turns={s: turns.get(s, set()) for s in gold},
                    abstention=category == 5,
                    gold_dropped=[s for s in named if s not in present],
                )
            )
        out.append(Haystack(sample, sessions, questions))
    return out
