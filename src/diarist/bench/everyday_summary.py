"""The everyday set's summary, report and paired comparison: pure functions over its rows (apart
from the runner, so that ``diarist bench verify`` and ``compare`` read them without the lab).

The cells (issue 41's "Must show"), each over the rows of the run's half:

- stated facts (kinds ``fact`` and ``changed``): the fact in the block (any place) and first (the
  best-ranked memory the block holds);
- facts that changed (kind ``changed``): the newest in the block, ranked above every older one
  the block holds, not itself marked earlier, and every older one the block holds marked earlier
  than a later entry (``newer_first_older_marked``); how often the older is in the block at all;
- notes asked by their title (kind ``title``): the note the top hit (rank 1), in the block, and
  the block empty;
- the other note questions (``front``, ``impersonal``, ``keyword``, ``bullet``): in the block, rank
  1, empty;
- answerable questions answered with nothing: every question with a gold whose block is empty;
- off-topic questions: the block empty;
- wrong marks (rows that record what each mark points to, ``earlier_than``): over the stated facts,
  the answer itself marked earlier than another entry (``gold_marked``), and any mark that is no
  older statement of the fact before its answer (``wrong``: the answer marked, or another entry
  marked earlier than the answer).

``TARGETS`` are the issue's thresholds; the summary says which cells meet them.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from .metrics import DIGITS, _fmt, _mean
from .rows import read_rows, sign_test

BENCHMARK = "everyday"
FACT_KINDS = ("fact", "changed")
NOTE_KINDS = ("title", "front", "impersonal", "keyword", "bullet")
# (section, cell, at least / at most, threshold): issue 41's targets on the held-out half.
TARGETS = (
    ("facts", "in_block", ">=", 0.98),
    ("facts", "first", ">=", 0.90),
    ("changed", "newer_first_older_marked", ">=", 0.95),
    ("title", "rank1", ">=", 0.95),
    ("title", "empty_n", "<=", 0),
    ("answerable", "empty_n", "<=", 0),
    ("offtopic", "empty", ">=", 0.80),
)


def _median(values: list[float]) -> float | None:
    return round(float(statistics.median(values)), 2) if values else None


def _share(rows: list[dict[str, Any]], key: str) -> float | None:
    return _mean([float(bool(r[key])) for r in rows])


def _failures(rows: list[dict[str, Any]], key: str) -> list[str]:
    return [r["id"] for r in rows if not r[key]]


def answer_cells(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "n": len(rows),
        "in_block": _share(rows, "in_block"),
        "first": _share(rows, "first"),
        "rank1": _share(rows, "top_hit"),
        "empty": _share(rows, "empty"),
        "empty_n": sum(bool(r["empty"]) for r in rows),
        "tokens_median": _median([r["n_tokens"] for r in rows]),
        "memories_mean": _mean([float(r["n_memories"]) for r in rows]),
        "missing": _failures(rows, "in_block"),
    }


def changed_cells(rows: list[dict[str, Any]]) -> dict[str, Any]:
    older_in = [r for r in rows if r["changed"]["older_in_block"]]
    return {
        "n": len(rows),
        "newer_in_block": _share(rows, "in_block"),
        "newer_first": _mean([float(r["changed"]["newer_first"]) for r in rows]),
        "older_in_block": _mean([float(bool(r["changed"]["older_in_block"])) for r in rows]),
        "older_marked_when_shown": _mean([float(r["changed"]["older_marked"]) for r in older_in]),
        "newer_first_older_marked": _mean([float(r["changed"]["passed"]) for r in rows]),
        "failures": [r["id"] for r in rows if not r["changed"]["passed"]],
    }


def mark_cells(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The marks that are wrong, over rows that record them (``earlier_than``)."""
    def wrong(r: dict[str, Any]) -> int:
        gold, older = set(r["gold"]), set(r["older"])
        return sum(1 for marked, target in r["earlier_than"].items()
                   if marked in gold or (target in gold and marked not in older))
    gold_marked = [r for r in rows if set(r["gold"]) & set(r["earlier_than"])]
    return {"n": len(rows), "gold_marked": _mean([float(bool(set(r["gold"]) & set(r["earlier_than"]))) for r in rows]),
            "gold_marked_n": len(gold_marked), "wrong_n": sum(wrong(r) for r in rows),
            "marks_n": sum(len(r["earlier_than"]) for r in rows), "gold_marked_ids": [r["id"] for r in gold_marked]}


def offtopic_cells(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {"n": len(rows), "empty": _share(rows, "empty"), "tokens_median": _median([r["n_tokens"] for r in rows]),
            "served": [r["id"] for r in rows if not r["empty"]]}


def summarise(rows: list[dict[str, Any]], dataset: str, config_name: str) -> dict[str, Any]:
    """Every number of summary.json, from rows alone."""
    facts = [r for r in rows if r["kind"] in FACT_KINDS]
    answerable = [r for r in rows if r["gold"]]
    sections: dict[str, Any] = {
        "facts": answer_cells(facts),
        "changed": changed_cells([r for r in rows if r["kind"] == "changed"]),
        "title": answer_cells([r for r in rows if r["kind"] == "title"]),
        "notes_other": answer_cells([r for r in rows if r["kind"] in NOTE_KINDS and r["kind"] != "title"]),
        "answerable": answer_cells(answerable),
        "offtopic": offtopic_cells([r for r in rows if r["kind"] == "offtopic"]),
    }
    if facts and all("earlier_than" in r for r in facts):
        sections["marks"] = mark_cells(facts)
    by_kind = {k: answer_cells([r for r in rows if r["kind"] == k])
               for k in (*FACT_KINDS, *NOTE_KINDS) if any(r["kind"] == k for r in rows)}
    by_haystack = {h: answer_cells([r for r in answerable if r["haystack"] == h])
                   for h in sorted({r["haystack"] for r in answerable})}
    targets = []
    for section, cell, op, threshold in TARGETS:
        value = sections[section][cell]
        met = None if value is None else (value >= threshold if op == ">=" else value <= threshold)
        targets.append({"section": section, "cell": cell, "target": f"{op} {threshold:g}", "value": value, "met": met})
    return {
        "benchmark": BENCHMARK, "dataset": dataset, "config": config_name, "n_rows": len(rows),
        "halves": sorted({r["half"] for r in rows}), **sections, "by_kind": by_kind, "by_haystack": by_haystack,
        "targets": targets,
        "timing": {"query_ms_p50": _median([r["query_ms"] for r in rows])},
    }


def render_markdown(summary: dict[str, Any], meta: dict[str, Any]) -> str:
    """summary.md: the tables of summary.json, nothing else computed."""
    lines = [f"# everyday · halves {', '.join(summary['halves'])} · config `{summary['config']}`", "",
             f"Command: `{meta.get('command', '?')}`", "",
             f"Data `{meta.get('data_dir', '?')}` (questions sha256 {str(meta.get('data_sha256', '?'))[:12]}), "
             f"model `{meta.get('model_id', '?')}`, code `{meta.get('code_version', '?')}`. {summary['n_rows']} rows.",
             "", "## Targets (issue 41)", "", "| section | cell | target | value | met |", "|---|---|---|---|---|"]
    lines += [f"| {t['section']} | {t['cell']} | {t['target']} | {_fmt(t['value'])} | "
              f"{'-' if t['met'] is None else ('yes' if t['met'] else 'NO')} |" for t in summary["targets"]]
    cols = ("n", "in_block", "first", "rank1", "empty", "empty_n", "tokens_median", "memories_mean")
    lines += ["", "## Answerable questions", "", "| set | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    for name in ("facts", "title", "notes_other", "answerable"):
        lines.append(f"| {name} | " + " | ".join(_fmt(summary[name][c]) for c in cols) + " |")
    for name, c in summary["by_kind"].items():
        lines.append(f"| kind {name} | " + " | ".join(_fmt(c[k]) for k in cols) + " |")
    for name, c in summary["by_haystack"].items():
        lines.append(f"| haystack {name} | " + " | ".join(_fmt(c[k]) for k in cols) + " |")
    ch = summary["changed"]
    lines += ["", "## Facts that changed", "",
              f"{ch['n']} questions: the newest in the block {_fmt(ch['newer_in_block'])}, ranked above the older "
              f"{_fmt(ch['newer_first'])}; the older in the block {_fmt(ch['older_in_block'])}, marked earlier when "
              f"shown {_fmt(ch['older_marked_when_shown'])}; newest first and older marked "
              f"{_fmt(ch['newer_first_older_marked'])}.",
              *([] if "marks" not in summary else [
                  "", f"Marks over the stated facts: {summary['marks']['marks_n']}; the answer itself marked earlier in "
                  f"{summary['marks']['gold_marked_n']} blocks ({_fmt(summary['marks']['gold_marked'])}); marks that are "
                  f"no older statement before the answer: {summary['marks']['wrong_n']}."]),
              "", "## Off-topic questions", "",
              f"{summary['offtopic']['n']} questions: empty block {_fmt(summary['offtopic']['empty'])}, median tokens "
              f"{_fmt(summary['offtopic']['tokens_median'])}."]
    lines += ["", "## Misses", ""]
    for name in ("facts", "title", "notes_other"):
        lines.append(f"- {name}, not in the block: {', '.join(summary[name]['missing']) or 'none'}")
    lines.append(f"- changed, not newest first with the older marked: {', '.join(ch['failures']) or 'none'}")
    lines.append(f"- off-topic, served something: {', '.join(summary['offtopic']['served']) or 'none'}")
    lines += ["", f"Query (context, search included): p50 {_fmt(summary['timing']['query_ms_p50'])} ms.", ""]
    return "\n".join(lines)


COMPARE_CELLS = ("in_block", "first", "top_hit", "empty")


def compare_everyday(a: Path, b: Path, set_name: str | None = None) -> str:
    """Run B against run A, paired on the questions both asked (``set_name``: a kind, ``answerable``,
    or all): questions that gain or lose each cell, with the exact sign test."""
    rows_a, rows_b = {r["id"]: r for r in read_rows(a)}, {r["id"]: r for r in read_rows(b)}
    common = sorted(set(rows_a) & set(rows_b))
    if set_name == "answerable":
        common = [q for q in common if rows_a[q]["gold"]]
    elif set_name:
        common = [q for q in common if rows_a[q]["kind"] == set_name]
        if not common:
            raise ValueError(f"no question of kind {set_name!r} in both runs")
    lines = [f"## everyday: {b} vs {a} (set `{set_name or 'all'}`, {len(common)} questions)", "",
             "For `empty`, gained means B's block is empty where A's was not (good for off-topic questions, "
             "bad for answerable ones).", "", "| cell | A | B | gained | lost | p |", "|---|---|---|---|---|---|"]
    listed = []
    for cell in COMPARE_CELLS:
        gained = [q for q in common if rows_b[q][cell] and not rows_a[q][cell]]
        lost = [q for q in common if rows_a[q][cell] and not rows_b[q][cell]]
        share = lambda rows: _fmt(_mean([float(bool(rows[q][cell])) for q in common]))  # noqa: E731
        lines.append(f"| {cell} | {share(rows_a)} | {share(rows_b)} | +{len(gained)} | -{len(lost)} | "
                     f"{sign_test(len(gained), len(lost)):.3g} |")
        listed += [f"- {cell} gained: {', '.join(gained)}"] if gained else []
        listed += [f"- {cell} lost: {', '.join(lost)}"] if lost else []
    return "\n".join(lines + [""] + listed) + "\n"


def dump(obj: Any) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False, default=float) + "\n"


__all__ = ["BENCHMARK", "DIGITS", "TARGETS", "compare_everyday", "render_markdown", "summarise"]
