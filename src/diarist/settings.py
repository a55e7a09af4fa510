"""One copy of every default. The library, the CLI, the server, MCP and the bench read them here."""

from __future__ import annotations

from .embed import DEFAULT_EMBEDDER
from .lexical import B, K1
from .read.fusion import RRF_K
from .write.plan import DEFAULT_PLAN, PLANS

DEFAULT_APP = "default"
INGEST_BATCH = 64  # sessions embedded and stored per transaction by every import (diarist.importers.load)
EMBEDDER = DEFAULT_EMBEDDER  # all-MiniLM-L6-v2, int8 ONNX, offline
PLAN = DEFAULT_PLAN
PLAN_CHOICES = tuple(PLANS)

DEPTH = 200  # each channel ranks this deep, well beyond the budget
BUDGET_K = 32  # hits Memory.search returns by default
RERANK_DEPTH = 50  # the second stage re-reads this many fused candidates
# The model-free second stage, its time signal only: over the convex fusion the names signal
# no longer paid (BM25 already weighs a rare name); chosen in every fold (BENCHMARKS.md, "Fusion").
RERANKER = "evidence:time"
FLOOR = "auto"  # the embedder's calibrated relevance floor (its evidence floor if it has one)
BM25_K1, BM25_B = K1, B
FUSION = "convex"  # convex combination of normalised channel scores (diarist.read.fusion); or "rrf"
FUSION_RRF_K = RRF_K
# The dense channel's weight in the convex fusion, chosen by cross-validation across both dev
# sets (BENCHMARKS.md, "Fusion"); the lexical channel gets the rest.
FUSION_DENSE_WEIGHT = 0.75
# What the lexical channel's (normalised) score of a chunk counts for in the convex fusion when
# the chunk is in another language than the question (diarist.lexical.language), per embedding
# model (its model id's start); 1 for the others. With a multilingual model a question in German
# finds an English memory by its vectors, and the few words it shares with one (names, cognates)
# pulled it toward the wrong one: 0.1. With the English default the vectors cannot cross
# languages and the shared words are most of what is left: 1. Each chosen by leave-one-language-out
# cross-validation over XQuAD's development languages (benchmarks/results/xquad/agreement/,
# docs/languages.md).
LEXICAL_AGREEMENT = {"multilingual-e5-small": 0.1}
# A short memory's dense score before the floor and fusion: (1 - w) x its cosine + w x its best
# sentence's cosine (diarist.read.sentences), per embedding model (its model id's start); 0 (the
# chunk's cosine alone) for the others. Chosen by cross-validation per model: MiniLM over the
# everyday set's dev folds and XQuAD's languages (0 in every fold: the block's rules were fitted on
# its chunk cosines), multilingual-e5-small leaving one XQuAD language out (benchmarks/sentences_cv.py,
# benchmarks/sentences_joint_cv.py, docs/languages.md).
SENTENCE_WEIGHT = {"multilingual-e5-small": 0.5}
# The share of the memories' mean vector taken off the question's, the dense candidates' and their
# sentences' vectors before the cosines (diarist.read.center, in the sentences stage), per embedding
# model (its model id's start); 0 (cosines as they are) for the others. multilingual-e5-small: 0.75,
# chosen leaving one XQuAD language out over questions across and within languages (5 of 6 folds;
# 0.8 in 1: benchmarks/xling_study.py, benchmarks/results/xquad/center/, docs/languages.md). The
# default MiniLM is not listed: its rules downstream were fitted on its plain cosines.
CENTER = {"multilingual-e5-small": 0.75}


def sentence_weight(model_id: str) -> float:
    """``SENTENCE_WEIGHT`` for an embedding model (0: its chunks' cosines alone)."""
    return next((value for start, value in SENTENCE_WEIGHT.items() if model_id.startswith(start)), 0.0)


def center_share(model_id: str) -> float:
    """``CENTER`` for an embedding model (0: cosines as they are)."""
    return next((value for start, value in CENTER.items() if model_id.startswith(start)), 0.0)


def lexical_agreement(model_id: str) -> float:
    """``LEXICAL_AGREEMENT`` for an embedding model (1: a lexical score counts in full)."""
    return next((value for start, value in LEXICAL_AGREEMENT.items() if model_id.startswith(start)), 1.0)

# Search results and the context block give each memory (session, note, fact) once, with at
# most this many of its best passages, in original order (diarist.read.group).
GROUP_BY_MEMORY = True
GROUP_PASSAGES = 3
CLI_K = 5  # hits `diarist search` prints
HTTP_K = 10  # hits the HTTP search returns unless asked
CONTEXT_BUDGET_TOKENS = 1000
CONTEXT_K = 32
# The share-of-best cut the context block used before diarist.read.cut: hits whose fused score
# is under this share of the best hit's; the largest grid value (0.05 steps) that lost no dev
# question's evidence on either dataset (BENCHMARKS.md, "Context block"). No longer the default:
# convex-fused scores of unrelated chunks bunch near 0.66 of the best, so it kept them; kept
# for comparison (Memory.context(relative_cut=CONTEXT_RELATIVE_CUT)).
CONTEXT_RELATIVE_CUT = 0.65
# The context block's cut (diarist.read.cut): a memory stays when its cosine reaches
# CUT_MIN_COSINE within CUT_MAX_GAP of the best memory's, or when it holds CUT_MIN_COVERAGE of
# the question's terms; the best memory always stays. For all-MiniLM-L6-v2 (its Calibration.block_cut): fitted
# by the context benchmark on both dev sets, grid over the three, admissible when the block holds
# evidence as often as the ranking's top 5 less a point (else as today's block), objective the
# evidence share of tokens and the off-topic tokens (benchmarks/context_cv.py, report
# benchmarks/results/context/cut_cv.json; out of sample: cross-dataset and 5-fold there). Fitted
# together with the trimming below, the point is 0.30 / 0.03 / 0.50 (trim_cv.json). CUT_MIN_COSINE
# was 0.20 (cut_cv.json); refitted with BLOCK_KEEP_BY_MEANING below on the everyday set (issue 41),
# where a short stated fact sits at cosine 0.10 to 0.20 under one unrelated conversation.
CUT = "auto"  # the cut below for the model it was chosen for (Calibration.block_cut); None: no cut
CUT_MIN_COSINE = 0.10
CUT_MAX_GAP = 0.07
CUT_MIN_COVERAGE = 0.34
# Trimming (diarist.read.trim): each memory in the block shown by its lines holding a selective
# question term (one in at most TRIM_MAX_SHARE of the block's lines), TRIM_CONTEXT lines either
# side; a memory below the first with no such line stays only with TRIM_KEEP_UNMATCHED, and shows at
# most TRIM_REST_RUNS runs; the first with no such line stays when its cosine reaches
# TRIM_UNMATCHED_MIN_COSINE (MiniLM's scale). Fitted with the cut by benchmarks/context_trim_cv.py on
# blocks replayed exactly on both dev sets (trim_cv.json; TRIM_MAX_SHARE fixed, not fitted).
# Off (build_context's default; Memory.context's is CONTEXT_TRIM below): it raises LoCoMo's evidence
# session in the block (0.908 -> 0.949) but shows the wrong line of it often (evidence turn 0.905 ->
# 0.786) and leaves 3 of the 30 short facts out.
TRIM = False
TRIM_CONTEXT = 0
TRIM_MAX_SHARE = 0.2
TRIM_KEEP_UNMATCHED = False
TRIM_REST_RUNS = 1
TRIM_UNMATCHED_MIN_COSINE = -1.0  # off: 0.25 fits the dev sets best but empties the Porto block
# Lines by meaning (diarist.read.lines): the best memory shown whole when its cosine reaches
# LINES_FIRST_WHOLE_COSINE, else by its LINES_FIRST_LINES lines closest in meaning to the question;
# at most LINES_MAX_REST memories below it, each by its LINES_REST_LINES closest lines when one reaches
# LINES_MIN_LINE_COSINE (MiniLM's scale), LINES_CONTEXT lines either side and LINES_AFTER after a
# line that asks. An option (Memory.context(trim="lines")), after the cut above; fitted by
# benchmarks/context_lines_cv.py --turn on blocks replayed exactly on both dev sets (lines_cv.json:
# the evidence share, the off-topic tokens and the evidence turn in the objective). Off by default:
# it holds the evidence session more often in fewer tokens, but shows the answer turn less often
# than whole passages do (see BENCHMARKS.md, "Lines by meaning").
LINES_FIRST_WHOLE_COSINE = 0.3
LINES_FIRST_LINES = 3
LINES_REST_LINES = 1
LINES_MAX_REST = 4
LINES_MIN_LINE_COSINE = 0.3
LINES_CONTEXT = 0
LINES_AFTER = 0
LINES_WHOLE = 1
LINES_GATE = -1.0
# Passages and pointers (Memory.context(trim="pointers")): the best POINTERS_WHOLE memories shown by
# their passages as the budget allows, the memories below them, down to place POINTERS_MAX_REST, by
# their one closest line when it reaches POINTERS_MIN_LINE_COSINE. Fitted by
# benchmarks/context_lines_cv.py --turn --keep-turn (lines_cv_keep.json: points that show the
# evidence turn as often as passages whole do, less a point). Memory.context's default (CONTEXT_TRIM).
POINTERS_WHOLE = 3
POINTERS_MAX_REST = 5
POINTERS_MIN_LINE_COSINE = 0.3
# ... unless not even the best memory has a line within POINTERS_GATE of the question: then none is
# shown whole, each by its closest lines (lines_cv_keep.json: 0.3 in sample, in 4 of 5 folds and
# fitted on LongMemEval alone; a question the memory cannot answer gets pointers, not pages).
POINTERS_GATE = 0.3
# The block never leaves out the BLOCK_KEEP_BY_MEANING memories closest in meaning to the question
# while it keeps another (diarist.read.budget): the cut keeps them (those it would have left out, as
# pointers: each by its closest line), the trim shows each at least by its closest line, the budget
# shows one by its closest line when its passages do not fit. Fitted with CUT_MIN_COSINE on the everyday set's dev half (grid 0-3 x
# 0.20/0.10/off: the most stated facts in the block, then the fewest tokens), reported on its
# held-out half; LoCoMo and LongMemEval checked at the point (benchmarks/results/everyday-read/).
BLOCK_KEEP_BY_MEANING = 3
# What Memory.context(trim="auto") serves where the cut applies (the default model, on whose cosine
# scale the thresholds above were fitted): "pointers", "lines" or "none" (passages whole).
CONTEXT_TRIM = "pointers"
# Line vectors a memory keeps for that trim (MiniLM: 1.5 KB each, so 20,000 lines hold about 30 MB).
LINES_CACHE_LINES = 20_000
