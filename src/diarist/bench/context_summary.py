"""The context benchmark's summary, report and paired comparison: pure functions over its rows,
apart from the runner so that `diarist bench verify` and `compare` (report.py) read them
without importing the lab."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from .metrics import DIGITS, _fmt, _mean, _percentile
from .rows import read_rows, sign_test

BENCHMARK = "context"
KNOWLEDGE_UPDATE = "knowledge-update"


def _median(values: list[float]) -> float | None:
    return round(float(statistics.median(values)), 2) if values else None


def _p90(values: list[float]) -> float | None:
    p90 = _percentile(values, 90)
    return None if p90 is None else float(p90)


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, DIGITS) if whole else None


def question_cells(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The cells of a set of questions with evidence."""
    turns = [r["evidence_turn_in_block"] for r in rows if r["evidence_turn_in_block"] is not None]
    served = [r for r in rows if not r["empty"]]
    tokens = [r["n_tokens"] for r in rows]
    return {
        "n": len(rows),
        "evidence_in_block": _mean([float(r["evidence_in_block"]) for r in rows]),
        "turn_n": len(turns),
        "evidence_turn_in_block": _mean([float(t) for t in turns]),
        "empty": _mean([float(r["empty"]) for r in rows]),
        "tokens_mean": round(sum(tokens) / len(tokens), 1) if tokens else None,
        "tokens_median": _median(tokens),
        "tokens_p90": _p90(tokens),
        # Pooled over the set: of every snippet token served, the share from evidence sessions.
        "evidence_token_share": _share(sum(r["evidence_tokens"] for r in rows), sum(r["snippet_tokens"] for r in rows)),
        # Per question (blocks that serve something), then averaged.
        "evidence_token_share_mean": _mean([r["evidence_tokens"] / r["snippet_tokens"] for r in served]),
        "memories_mean": _mean([float(r["n_memories"]) for r in rows]),
        "memories_median": _median([float(r["n_memories"]) for r in rows]),
    }


def offtopic_cells(rows: list[dict[str, Any]]) -> dict[str, Any]:
    tokens = [r["n_tokens"] for r in rows]
    return {
        "n": len(rows),
        "empty": _mean([float(r["empty"]) for r in rows]),
        "tokens_mean": round(sum(tokens) / len(tokens), 1) if tokens else None,
        "tokens_median": _median(tokens),
        "tokens_p90": _p90(tokens),
        "memories_mean": _mean([float(r["n_memories"]) for r in rows]),
    }


def question_sets(dataset: str) -> dict[str, str]:
    if dataset == "longmemeval":
        return {"no_abs": "questions with an evidence session, without the abstention (_abs) ones",
                "abs": "the abstention questions (_abs): their related sessions belong in the block (reported apart)"}
    if dataset == "locomo":
        return {"all": "every question whose evidence names a session of the conversation",
                "no_adv": "without category 5 (adversarial)"}
    return {"shortfact": "the short-fact set: a fact stated once next to long unrelated conversations"}


def _members(rows: list[dict[str, Any]], dataset: str) -> dict[str, list[dict[str, Any]]]:
    asked = [r for r in rows if r["kind"] in ("legitimate", "abstention", "shortfact") and r["gold"]]
    if dataset == "longmemeval":
        return {"no_abs": [r for r in asked if not r["abstention"]], "abs": [r for r in asked if r["abstention"]]}
    if dataset == "locomo":
        return {"all": asked, "no_adv": [r for r in asked if not r["abstention"]]}
    return {"shortfact": asked}


def summarise(rows: list[dict[str, Any]], dataset: str, config_name: str) -> dict[str, Any]:
    """Every number of summary.json, from rows alone."""
    sets = {name: question_cells(members) for name, members in _members(rows, dataset).items()}
    types = sorted({r["type"] for r in rows if r["kind"] in ("legitimate", "abstention") and r["gold"]})
    by_type = {t: question_cells([r for r in rows if r["type"] == t and r["gold"]
                                  and r["kind"] in ("legitimate", "abstention")]) for t in types}
    off = {kind: offtopic_cells([r for r in rows if r["kind"] == kind])
           for kind in ("offtopic", "offtopic_personal") if any(r["kind"] == kind for r in rows)}
    summary: dict[str, Any] = {
        "benchmark": BENCHMARK, "dataset": dataset, "config": config_name, "n_rows": len(rows),
        "question_sets": question_sets(dataset), "overall": sets, "by_type": by_type, "offtopic": off,
        "timing": {"query_ms_p50": _median([r["query_ms"] for r in rows]),
                   "query_ms_p90": _p90([r["query_ms"] for r in rows])},
    }
    updates = [r["latest"] for r in rows if "latest" in r and not r["abstention"]]
    if updates:
        summary["knowledge_update"] = {"n": len(updates),
                                       "newest_in_block": _mean([float(u["in_block"]) for u in updates]),
                                       "newest_shown_latest": _mean([float(u["shown_latest"]) for u in updates])}
    facts = [r for r in rows if r["kind"] == "shortfact"]
    if facts:
        summary["shortfact"] = {
            "n": len(facts),
            "fact_in_block": _mean([float(bool(r["evidence_in_block"])) for r in facts]),
            "top_hit_is_fact": _mean([float(r["shortfact"]["top_hit_is_fact"]) for r in facts]),
            "fact_alone": _mean([float(bool(r["evidence_in_block"]) and r["shortfact"]["unrelated_in_block"] == 0)
                                 for r in facts]),
            "unrelated_in_block_mean": _mean([float(r["shortfact"]["unrelated_in_block"]) for r in facts]),
            "failures": [r["id"] for r in facts
                         if not (r["evidence_in_block"] and r["shortfact"]["unrelated_in_block"] == 0)],
        }
    return summary


QUESTION_COLUMNS = ("evidence_in_block", "evidence_turn_in_block", "evidence_token_share", "evidence_token_share_mean",
                    "tokens_median", "tokens_mean", "tokens_p90", "memories_mean", "empty")


def render_markdown(summary: dict[str, Any], meta: dict[str, Any]) -> str:
    """summary.md: the tables of summary.json, nothing else computed."""
    lines = [f"# context block · {summary['dataset']} · config `{summary['config']}`", "",
             f"Command: `{meta.get('command', '?')}`", "",
             f"Data `{meta.get('data_file', '?')}` (sha256 {str(meta.get('data_sha256', '?'))[:12]}), "
             f"model `{meta.get('model_id', '?')}`, code `{meta.get('code_version', '?')}`; "
             f"budget {meta.get('budget_tokens', '?')} tokens. {summary['n_rows']} rows.", "", "Question sets:", ""]
    lines += [f"- `{name}`: {what}" for name, what in summary["question_sets"].items()]
    head = "| set | n | " + " | ".join(QUESTION_COLUMNS) + " |"
    rule = "|---|---|" + "---|" * len(QUESTION_COLUMNS)
    lines += ["", "## Questions", "", head, rule]
    lines += [f"| {name} | {c['n']} | " + " | ".join(_fmt(c[k]) for k in QUESTION_COLUMNS) + " |"
              for name, c in summary["overall"].items()]
    if summary["by_type"]:
        lines += ["", "## By type", "", head.replace("| set |", "| type |"), rule]
        lines += [f"| {t} | {c['n']} | " + " | ".join(_fmt(c[k]) for k in QUESTION_COLUMNS) + " |"
                  for t, c in summary["by_type"].items()]
    if summary["offtopic"]:
        lines += ["", "## Off-topic questions", "", "| set | n | empty | tokens median | tokens mean | tokens p90 | memories mean |",
                  "|---|---|---|---|---|---|---|"]
        lines += [f"| {k} | {c['n']} | {_fmt(c['empty'])} | {_fmt(c['tokens_median'])} | {_fmt(c['tokens_mean'])} | "
                  f"{_fmt(c['tokens_p90'])} | {_fmt(c['memories_mean'])} |" for k, c in summary["offtopic"].items()]
    if "knowledge_update" in summary:
        u = summary["knowledge_update"]
        lines += ["", "## Knowledge-update questions", "",
                  f"{u['n']} questions: the newest evidence session in the block {_fmt(u['newest_in_block'])}, "
                  f"in the block and shown as the latest of the evidence {_fmt(u['newest_shown_latest'])}."]
    if "shortfact" in summary:
        s = summary["shortfact"]
        lines += ["", "## Short-fact set", "",
                  f"{s['n']} questions: fact in the block {_fmt(s['fact_in_block'])}, fact the top hit "
                  f"{_fmt(s['top_hit_is_fact'])}, fact alone (no unrelated conversation) {_fmt(s['fact_alone'])}, "
                  f"unrelated conversations per block {_fmt(s['unrelated_in_block_mean'])}; "
                  f"not alone or missing: {', '.join(s['failures']) or 'none'}."]
    t = summary["timing"]
    lines += ["", f"Query (context, search included): p50 {_fmt(t['query_ms_p50'])} ms, p90 {_fmt(t['query_ms_p90'])} ms.", ""]
    return "\n".join(lines)



COMPARE_CELLS = ("evidence_in_block", "evidence_turn_in_block")


def compare_context(a: Path, b: Path, set_name: str | None = None) -> str:
    """Block B against block A, paired on the questions of one set: questions whose evidence
    (session, turn) enters or leaves the block, with the exact sign test; tokens and memories
    side by side."""

    meta = json.loads((a / "config.json").read_text(encoding="utf-8"))
    dataset = meta["dataset"]
    if json.loads((b / "config.json").read_text(encoding="utf-8"))["dataset"] != dataset:
        raise ValueError(f"{a} and {b} are not runs of one dataset: nothing to pair")
    sets_a, sets_b = _members(read_rows(a), dataset), _members(read_rows(b), dataset)
    set_name = set_name or next(iter(sets_a))
    if set_name not in sets_a:
        raise ValueError(f"no question set {set_name!r} in a {dataset} context run; use {', '.join(sets_a)}")
    rows_a = {r["id"]: r for r in sets_a[set_name]}
    rows_b = {r["id"]: r for r in sets_b[set_name]}
    common = sorted(set(rows_a) & set(rows_b))
    lines = [f"## context block: {b} vs {a} ({dataset}, set `{set_name}`, {len(common)} questions)", "",
             "| cell | A | B | gained | lost | p |", "|---|---|---|---|---|---|"]
    for cell in COMPARE_CELLS:
        ids = [q for q in common if rows_a[q][cell] is not None and rows_b[q][cell] is not None]
        gained = [q for q in ids if rows_b[q][cell] and not rows_a[q][cell]]
        lost = [q for q in ids if rows_a[q][cell] and not rows_b[q][cell]]
        share = lambda rows: _fmt(_mean([float(bool(rows[q][cell])) for q in ids]))  # noqa: E731
        lines.append(f"| {cell} (n={len(ids)}) | {share(rows_a)} | {share(rows_b)} | +{len(gained)} | -{len(lost)} | "
                     f"{sign_test(len(gained), len(lost)):.3g} |")
    for name, rows in (("A", rows_a), ("B", rows_b)):
        cells = question_cells([rows[q] for q in common])
        lines.append(f"\n{name}: evidence token share {_fmt(cells['evidence_token_share'])}, median tokens "
                     f"{_fmt(cells['tokens_median'])}, memories per block {_fmt(cells['memories_mean'])}.")
    return "\n".join(lines) + "\n"
