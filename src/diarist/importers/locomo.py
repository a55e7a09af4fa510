"""LoCoMo (``locomo10.json``): a list of conversations, each with ``conversation`` (``speaker_a``,
``speaker_b``, ``session_N``, ``session_N_date_time``) and ``qa``.

What it becomes: each session of each conversation, id ``SAMPLE:session_N``, date its
``session_N_date_time``. Both speakers are people, so both are ``user`` turns (no assistant: the
dense channel reads every speaker's words, as a conversation between people needs; mapping one
speaker to ``assistant`` left half of every conversation unembedded, BENCHMARKS.md "Fusion"),
and each turn keeps its speaker's name in front (``Caroline: ...``) and a shared photo's caption
(``[shares a photo of ...]``); metadata ``{"dia_ids": [...]}``. The questions are not imported.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..write.validate import SessionInput
from .base import JSON_SUFFIXES, Source, each_record, record_shape

LOCOMO_SESSION = re.compile(r"^session_(\d+)$")


def locomo_turn_text(turn: dict[str, Any]) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [shares a photo of {turn['blip_caption']}]"
    return text


def locomo_sessions(record: dict[str, Any]) -> Iterator[SessionInput]:
    conversation = record["conversation"]
    _named_speakers = (conversation["speaker_a"], conversation["speaker_b"])  # a LoCoMo file names both
    keys = sorted(
        (int(m.group(1)), key)
        for key in conversation
        if (m := LOCOMO_SESSION.match(key)) and isinstance(conversation[key], list)
    )
    for number, key in keys:
        turns = conversation[key]
        if not turns:
            continue
        messages = [
            {
                "role": "user",
                "content": locomo_turn_text(turn),
            }
            for turn in turns
        ]
        yield SessionInput(
            messages,
            f"{record['sample_id']}:{key}",
            conversation.get(f"{key}_date_time"),
            {"dia_ids": [t["dia_id"] for t in turns]},
        )


class LoCoMoImporter:
    name = "locomo"
    title = "LoCoMo benchmark file"
    suffixes = JSON_SUFFIXES
    unit = "session"

    def detect(self, source: Source, *, forced: bool = False) -> bool | str:
        if (why := record_shape(source)) is not None:
            return why
        first = source.records[0]
        if "conversation" not in first or "qa" not in first:
            return "no 'conversation' and 'qa' in record 1"
        return True

    def read(self, source: Source, limit: int | None = None) -> Iterator[SessionInput]:
        return each_record(source.iter_records(limit), source, "LoCoMo", locomo_sessions)


IMPORTER = LoCoMoImporter()
