"""Retrieval metrics as small pure functions, and the summary tables computed from rows.

Session level, binary relevance, for each k in KS (never k >= haystack size: then the cell is
None and the question is left out of that average):

- recall_any@k: 1 if at least one evidence session is in the top k
- recall_all@k: 1 if every evidence session is in the top k
- ndcg@k: DCG of the top k (gain 1 / log2(rank + 1)) over the DCG of an ideal ranking
- mrr: 1 / rank of the first evidence session in the full ranking

Turn level: the rank of the first evidence turn when the ranked chunks are read in order, each
chunk's turns in order, every turn counted once.

``summarise`` turns rows into the summary; ``verify`` calls it again and compares every cell.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from typing import Any

KS = (1, 3, 5, 10)
DIGITS = 4
HEADLINE = ("r_any@1", "r_any@3", "r_any@5", "r_any@10", "r_all@5", "r_all@10", "ndcg@5", "ndcg@10", "mrr")


def metric_names() -> list[str]:
    names = [f"{m}@{k}" for m in ("r_any", "r_all", "ndcg") for k in KS]
    return names + ["mrr"]


def session_metrics(ranked: Sequence[str], gold: Iterable[str], n_sessions: int) -> dict[str, float | None]:
    gold = set(gold)
    out: dict[str, float | None] = {}
    if not gold:
        return {name: None for name in metric_names()}
    positions = [i for i, sid in enumerate(ranked) if sid in gold]
    for k in KS:
        if k >= n_sessions:
            out[f"r_any@{k}"] = out[f"r_all@{k}"] = out[f"ndcg@{k}"] = None
            continue
        top = set(ranked[:k])
        out[f"r_any@{k}"] = float(bool(top & gold))
        out[f"r_all@{k}"] = float(gold <= top)
        dcg = sum(1.0 / math.log2(i + 2) for i in positions if i < k)
        ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(gold), k)))
        out[f"ndcg@{k}"] = dcg / ideal
    out["mrr"] = 1.0 / (positions[0] + 1) if positions else 0.0
    # Reorder keys as metric_names() lists them.
    return {name: out[name] for name in metric_names()}


def first_rank(ranked_turns: Sequence[tuple[str, int]], evidence: dict[str, set[int]]) -> int | None:
    """1-based rank of the first evidence turn in a list of (session id, turn index)."""
    for i, (sid, turn) in enumerate(ranked_turns, start=1):
        if turn in evidence.get(sid, ()):
            return i
    return None


# -- summaries ----------------------------------------------------------------------------------


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), DIGITS) if values else None


def _percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (no interpolation: the value of an actual question)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return round(ordered[rank - 1], 2)


def _table(rows: list[dict[str, Any]], key: str) -> dict[str, Any]:
    cells: dict[str, Any] = {"n": len(rows)}
    for name in metric_names():
        cells[name] = _mean([r[key][name] for r in rows if r[key][name] is not None])
    turn_ranks = [r["turn"]["first_evidence_turn_rank"] for r in rows if r["turn"]["has_evidence_turns"]]
    cells["turn_n"] = len(turn_ranks)
    cells["turn_mrr"] = _mean([1.0 / t if t else 0.0 for t in turn_ranks])
    cells["turn@10"] = _mean([float(bool(t) and t <= 10) for t in turn_ranks])
    cells["turn@50"] = _mean([float(bool(t) and t <= 50) for t in turn_ranks])
    found = [t for t in turn_ranks if t]
    cells["turn_median"] = float(statistics.median(found)) if found else None
    return cells


def question_sets(dataset: str) -> dict[str, str]:
    """The averages a summary reports, and what each one means."""
    if dataset == "longmemeval":
        return {
            "all": "all questions; gold = answer_session_ids",
            "no_abs": "without the abstention (_abs) questions; gold = answer_session_ids",
            "user_rule": "official user-side rule: gold = evidence sessions with a user-side "
            "has_answer turn; without _abs questions and questions left with no such session",
        }
    return {
        "all": "all questions whose evidence names a session of the conversation",
        "no_adv": "without category 5 (adversarial)",
    }


def _members(rows: list[dict[str, Any]], dataset: str) -> dict[str, tuple[list[dict[str, Any]], str]]:
    with_gold = [r for r in rows if r["gold"]]
    sets = {"all": (with_gold, "metrics")}
    if dataset == "longmemeval":
        sets["no_abs"] = ([r for r in with_gold if not r["abstention"]], "metrics")
        sets["user_rule"] = (
            [r for r in with_gold if not r["abstention"] and r.get("metrics_user") is not None],
            "metrics_user",
        )
    else:
        sets["no_adv"] = ([r for r in with_gold if not r["abstention"]], "metrics")
    return sets


def summarise(rows: list[dict[str, Any]], dataset: str, config_name: str) -> dict[str, Any]:
    """Every number of summary.json, from rows alone."""
    types = sorted({r["type"] for r in rows})
    overall, by_type = {}, {}
    for name, (members, key) in _members(rows, dataset).items():
        overall[name] = _table(members, key)
        by_type[name] = {t: _table([r for r in members if r["type"] == t], key)
                         for t in types if any(r["type"] == t for r in members)}
    units: dict[str, float] = {}
    for r in rows:
        units.setdefault(r["unit"], r["index_ms"])
    query_ms = [r["query_ms"] for r in rows]
    return {
        "dataset": dataset,
        "config": config_name,
        "n_rows": len(rows),
        "n_without_gold": sum(1 for r in rows if not r["gold"]),
        "question_sets": question_sets(dataset),
        "overall": overall,
        "by_type": by_type,
        "timing": {
            "query_ms_p50": _percentile(query_ms, 50),
            "query_ms_p95": _percentile(query_ms, 95),
            "index_ms_p50": _percentile(list(units.values()), 50),
            "index_ms_p95": _percentile(list(units.values()), 95),
            "n_haystacks": len(units),
        },
        "peak_rss_mb": round(max((r["peak_rss_mb"] for r in rows), default=0.0), 1),
        "unranked_sessions_max": max((r["unranked"] for r in rows), default=0),
    }


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4f}" if abs(value) <= 1 else f"{value:.1f}"
    return str(value)


def render_markdown(summary: dict[str, Any], config: dict[str, Any]) -> str:
    """summary.md: the tables of summary.json, nothing else computed."""
    lines = [f"# {summary['dataset']} · config `{summary['config']}`", ""]
    lines.append(f"{config.get('description', '')}".strip())
    lines += ["", f"Data: `{config.get('data_file', '?')}` (sha256 {str(config.get('data_sha256', '?'))[:12]}), "
              f"model `{config.get('model_id', '?')}`, code `{config.get('code_version', '?')}`.", ""]
    lines.append(
        f"{summary['n_rows']} questions; {summary['n_without_gold']} without a gold session in their "
        "haystack (left out of every average). Session-level metrics; k never reaches the haystack size."
    )
    lines += ["", "Question sets:", ""]
    for name, what in summary["question_sets"].items():
        lines.append(f"- `{name}`: {what}")
    cols = list(HEADLINE)
    lines += ["", "## Overall", "", "| set | n | " + " | ".join(cols) + " | turn MRR | turn@10 |",
              "|---|---|" + "---|" * (len(cols) + 2)]
    for name, cells in summary["overall"].items():
        lines.append(f"| {name} | {cells['n']} | " + " | ".join(_fmt(cells[c]) for c in cols)
                     + f" | {_fmt(cells['turn_mrr'])} | {_fmt(cells['turn@10'])} |")
    for set_name, table in summary["by_type"].items():
        lines += ["", f"## By type (`{set_name}`)", "", "| type | n | " + " | ".join(cols) + " |",
                  "|---|---|" + "---|" * len(cols)]
        for qtype, cells in table.items():
            lines.append(f"| {qtype} | {cells['n']} | " + " | ".join(_fmt(cells[c]) for c in cols) + " |")
    t = summary["timing"]
    lines += [
        "",
        "## Cost",
        "",
        f"- query (search + session ranking): p50 {_fmt(t['query_ms_p50'])} ms, p95 {_fmt(t['query_ms_p95'])} ms",
        f"- index one haystack ({t['n_haystacks']} haystacks; vectors from the cache): "
        f"p50 {_fmt(t['index_ms_p50'])} ms, p95 {_fmt(t['index_ms_p95'])} ms",
        f"- peak resident memory of the run: {summary['peak_rss_mb']} MB",
        f"- most sessions of one haystack that no retrieved chunk reached (ranked last, in haystack "
        f"order): {summary['unranked_sessions_max']}",
        "",
    ]
    return "\n".join(lines)
