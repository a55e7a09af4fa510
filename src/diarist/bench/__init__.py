"""The benchmark lab: LongMemEval and LoCoMo retrieval, one row per question, re-derivable tables.

Retrieval is the instrument: deterministic, no LLM in the loop. ``diarist bench longmemeval``
and ``diarist bench locomo`` write ``rows.jsonl.gz`` (one row per question), ``summary.json`` and
``summary.md`` (computed from the rows), ``config.json`` (every parameter, model, data sha256,
code version) and a PNG of recall@k by question type; ``diarist bench verify`` recomputes every
summary cell from the rows, and ``diarist bench compare`` prints a paired comparison.
"""
