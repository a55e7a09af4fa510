"""The retired ablations of the design notes, as a study beside the lab (not in the library).

Measured with RRF before the convex fusion became the default (``diarist.bench.configs.RRF``):
one document per session, the other index plans, the mean of a session's top 3 chunks, a
rule-based extract of each session (``extract.py``), the evidence second stage's variants, and
follow-up questions whose topic sits in the previous turn (``followups.py``). Their runs stay
under ``benchmarks/results/`` with the manifests that name the commit and command that wrote
them. Run one again from the repository root with the lab's own commands, these configs added:

    python -m benchmarks.studies.ablations longmemeval --config session-doc,mean3 --data ... --out ...
    python -m benchmarks.studies.ablations configs
"""

from __future__ import annotations

from dataclasses import replace

from diarist.bench import runner
from diarist.bench.cli import bench
from diarist.bench.configs import CONFIGS, RRF, BenchConfig

from .extract import condense
from .followups import make_followup

ABLATIONS: list[BenchConfig] = [
    replace(RRF, name="session-doc", doc="session",
            description="ablation 2: one document per session: BM25 reads the whole session, the "
            "vector reads its first user chunk (the first 254-token window of its user turns); RRF"),
    replace(RRF, name="session-doc-vectors", doc="session", channel="dense",
            description="ablation 2: one vector per session (its first user chunk: the first 254-token "
            "window of its user turns), no BM25: what a 256-token embedder reads of a session"),
    replace(RRF, name="session-doc-bm25", doc="session", channel="lexical",
            description="ablation 2: BM25 alone over one document per session (the whole session)"),
    replace(RRF, name="session-bm25-chunk-vectors", doc="session-lexical",
            description="ablation 2 (mixed grain): BM25 over one document per session (every "
            "turn), the default's chunk vectors; RRF"),
    replace(RRF, name="split-apart", view="split-apart",
            description="ablation 3: the split view before commit 8e7ab61: chunks of every turn "
            "in BM25 only, separate chunks of the user's turns in the dense channel only; RRF"),
    replace(RRF, name="user", view="user",
            description="ablation 3: user turns only, in both channels; RRF"),
    replace(RRF, name="all", view="all",
            description="ablation 3: all turns, in both channels; RRF"),
    replace(RRF, name="both", view="both",
            description="ablation 3: all-turn chunks and user-turn chunks, each in both channels; RRF"),
    replace(CONFIGS["default"], name="view-all-vectors", view="all", channel="dense", reranker=None,
            description="the dense channel alone over all-turn chunks (every speaker's words embedded)"),
    replace(RRF, name="all-vectors", view="all", channel="dense",
            description="ablation 3: all-turn chunks, dense channel alone"),
    replace(RRF, name="mean3", aggregate="mean3",
            description="ablation 4: default, session score = mean of its top-3 chunk scores"),
    replace(RRF, name="extract-only", extract="alone",
            description="ablation 5: each session condensed by rules to ~500 characters of "
            "key facts, indexed alone (one document per session, both channels)"),
    replace(RRF, name="extract-fused", extract="fused",
            description="ablation 5: default session ranking fused by RRF with the ranking "
            "of the rule-based extracts"),
    replace(RRF, name="evidence", reranker="evidence",
            description="precision: default + the model-free second stage (names, time spans "
            "resolved against the question date), fused by rank over the top 50"),
    replace(RRF, name="evidence-recency", reranker="evidence:names,time,recency",
            description="precision: the evidence second stage with the recency signal as well "
            "(newer first when the question asks for the current state)"),
    replace(RRF, name="followup", followup="previous",
            description="follow-ups: the topic moved into the previous turn, the question left "
            "bare; search(bare, previous=...)"),
    replace(RRF, name="followup-alone", followup="alone",
            description="follow-ups: the bare question alone, without the previous turn"),
]


def register() -> None:
    """Add the ablations to the lab's configs, and what they need to the runner."""
    for config in ABLATIONS:
        if CONFIGS.get(config.name, config) != config:
            raise ValueError(f"config {config.name!r} is named by the lab already")
        CONFIGS[config.name] = config
    runner.STUDY_HOOKS.update(condense=condense, followup=make_followup)


if __name__ == "__main__":
    register()
    bench()
