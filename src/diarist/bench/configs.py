"""Named benchmark configurations: the default and the runs the reference tables re-run.

Every field is recorded in each run's ``config.json``. Literature defaults throughout: BM25
k1 = 1.5, b = 0.75; RRF k = 60; each channel ranked 200 deep. The retired ablations of the
design notes (one document per session, the other plans, extracts, follow-ups...) are a study
now: ``benchmarks/studies/ablations.py`` adds them (``python -m benchmarks.studies.ablations``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from .. import lexical, settings
from ..read.fusion import RRF_K


@dataclass(frozen=True)
class BenchConfig:
    name: str
    description: str
    view: str = "split"  # index plan: split | split-apart | all | user | both (diarist.write.plan)
    doc: str = "chunks"  # chunks: window-sized chunks; session: one document per session
    channel: str = "fused"  # fused | dense (vectors only) | lexical (BM25 only)
    fusion: str = settings.FUSION  # convex (normalised scores) | rrf (ranks)
    dense_weight: float = settings.FUSION_DENSE_WEIGHT
    aggregate: str = "max"  # session score from its chunks: max | mean3 (mean of the top 3)
    extract: str = "none"  # none | alone (rule-based extract only) | fused (raw + extract, RRF)
    extract_chars: int = 500
    depth: int = 200
    rrf_k: int = RRF_K
    k1: float = lexical.K1
    b: float = lexical.B
    chunks_asked: int = 400  # chunk hits asked of Memory.search (both channels' depth)
    reranker: str | None = None  # a second stage (Memory(reranker=...)); None: the fused order
    floor: float | None = None  # the relevance floor; None: rank everything (what recall measures)
    rerank_depth: int = 50
    # Follow-up variants (bench.followups): "none" asks the question; "previous" asks the bare
    # follow-up with the topic in the previous turn; "alone" asks the bare follow-up only.
    followup: str = "none"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_DEFAULT = BenchConfig(
    "default",
    "what Memory() does by default: view split (chunks of every turn in both channels, each "
    "chunk's vector reading only the user's words in it); convex fusion of normalised scores; "
    "the evidence second stage (its time signal) over the top 50; session = its best chunk",
    reranker=settings.RERANKER,
)

#: The default before the convex fusion; the ablations were measured over it (benchmarks/studies/ablations.py).
RRF = replace(_DEFAULT, fusion="rrf", reranker=None)

# The MaxSim second stage (diarist.rerank.maxsim) as cross-validated by benchmarks/maxsim_cv.py;
# its token vectors cached beside the embedding cache, so a rerun costs no model pass.
MAXSIM_SPEC = "maxsim:weight=0.5,depth=5,mode=convex,cache=benchmarks/.cache/maxsim_tokens.sqlite"

CONFIGS: dict[str, BenchConfig] = {
    c.name: c
    for c in [
        _DEFAULT,
        replace(RRF, name="rrf", description="the default before the convex fusion: the same channels fused "
                "by Reciprocal Rank Fusion (k = 60)"),
        replace(_DEFAULT, name="fused-only", reranker=None,
                description="the default without its second stage: the convex fusion's own order"),
        replace(_DEFAULT, name="maxsim", reranker=MAXSIM_SPEC,
                description="issue 30 item 3: the default + MaxSim (late interaction over MiniLM's token "
                "vectors) blended with the fused score over the top 5, then the default's evidence:time stage"),
        replace(_DEFAULT, name="second-stage-names-time", reranker="evidence",
                description="the default with both signals of the evidence second stage (names and time)"),
        replace(_DEFAULT, name="vectors-only", channel="dense", reranker=None,
                description="ablation 1: the dense channel alone (the default's vectors: user words), no BM25"),
        replace(_DEFAULT, name="bm25-only", channel="lexical", reranker=None,
                description="ablation 1: the BM25 channel alone (all-turn chunks), no vectors (nothing embedded)"),
        replace(_DEFAULT, name="view-all", view="all",
                description="item 3/6 of issue 9: the default (convex fusion, second stage) over all-turn "
                "chunks, every speaker's words embedded, assistants' included"),
    ]
}


def get_config(name: str) -> BenchConfig:
    try:
        return CONFIGS[name]
    except KeyError:
        raise ValueError(f"unknown bench config {name!r}; use one of {', '.join(CONFIGS)}") from None
