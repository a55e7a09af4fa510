"""The benchmark lab: LongMemEval and LoCoMo retrieval, one row per question, re-derivable tables.

Retrieval is the instrument: deterministic, no LLM in the loop. ``vestige bench longmemeval``
and ``vestige bench locomo`` write ``rows.jsonl`` (one row per question), ``summary.json`` and
``summary.md`` (computed from the rows), ``config.json`` (every parameter, model, data sha256,
code version) and a PNG of recall@k by question type; ``vestige bench verify`` recomputes every
summary cell from the rows, and ``vestige bench compare`` prints a paired comparison.
"""
