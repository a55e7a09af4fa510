"""The docs show what the code does: every shown output in README.md and docs/ is run again here.

A *shown-output block* is a fenced block marked ``console`` (``$ COMMAND`` lines, each followed by
what it prints, standard error included) or ``pycon`` (``>>> `` and ``... `` lines, each followed by
what Python prints). Blocks of other kinds (``bash``, ``python``, ``json``...) show no output and
are not run. The blocks of one page run in order, sharing state: the console ones in one shell
per page, the pycon ones in one namespace, each from a scratch folder that holds links to the
repository's top-level files and folders (so ``tests/data/...`` and ``src/diarist/demo/data``
read as from a checkout, and what a command writes lands in the scratch folder), with HOME in a
scratch folder too (the default database is a new one there, never yours) and the default
embedder. docs/lab-notes/ is left out: it is a dated record of past runs, not a description of
today's behaviour.

What is normalised, on both sides, and nothing else:

- the scratch HOME is printed as ``~``;
- durations (a number followed by ``s``, ``ms`` or ``µs``) compare as ``N s``: they vary by run;
- the progress lines ``diarist ingest`` writes on standard error (``NAME: 3/7 sessions (42%)``)
  are dropped: they depend on timing;
- a block whose last line is ``...`` shows the first lines of the output only;
- in pycon blocks a blank output line is written ``<BLANKLINE>``, as doctest writes it.

When the outputs change on purpose (a ranking change), rewrite them in place and read the diff:

    python -m pytest tests/test_docs.py --update-docs

Also here: every command has help and is documented (docs/cli.md holds each one's ``--help``),
and every name in the registries is in docs/extending.md.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import traceback
from dataclasses import dataclass, field
from doctest import DocTestParser
from pathlib import Path

import click
import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\s*$")
DURATION = re.compile(r"\b\d+(?:\.\d+)?(?= ?(?:s|ms|µs)\b)")
PROGRESS = re.compile(r"^\S.*: \d+/\d+ \S+ \(\d+%\)(?:, [\d.]+ \S+/s)?$")
MARK = "@@diarist-docs-output {}@@"


@dataclass
class Example:
    """One command (or Python statement) and the output the page shows for it."""

    source: str
    shown: list[str]
    first: int  # index in the page's lines of the first shown output line
    prefix: bool = False  # the block ends with "...": the output's first lines only


@dataclass
class Block:
    kind: str  # console or pycon
    start: int  # index of the opening fence
    examples: list[Example] = field(default_factory=list)


def shown_blocks(lines: list[str]) -> list[Block]:
    """The page's shown-output blocks, each split into its examples."""
    blocks, i = [], 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), None)
        if end is None:
            raise AssertionError(f"line {i + 1}: a code block is never closed")
        if fence.group(1) in ("console", "pycon"):
            block = Block(fence.group(1), i)
            (console_examples if block.kind == "console" else pycon_examples)(lines, i + 1, end, block)
            blocks.append(block)
        i = end + 1
    return blocks


def console_examples(lines: list[str], start: int, end: int, block: Block) -> None:
    i = start
    while i < end:
        if not lines[i].startswith("$ "):
            raise AssertionError(f"line {i + 1}: a console block's output must follow a '$ ' command")
        command = [lines[i][2:]]
        while command[-1].endswith("\\") and i + 1 < end:
            i += 1
            command.append(lines[i])
        j = i + 1
        while j < end and not lines[j].startswith("$ "):
            j += 1
        block.examples.append(_example("\n".join(command), lines[i + 1 : j], i + 1))
        i = j


def pycon_examples(lines: list[str], start: int, end: int, block: Block) -> None:
    text = "".join(line + "\n" for line in lines[start:end])
    for example in DocTestParser().get_examples(text):
        first = start + example.lineno + example.source.count("\n")
        shown = ["" if line == "<BLANKLINE>" else line for line in example.want.splitlines()]
        block.examples.append(_example(example.source, shown, first))


def _example(source: str, shown: list[str], first: int) -> Example:
    prefix = bool(shown) and shown[-1] == "..."
    return Example(source, shown[:-1] if prefix else shown, first, prefix)


def normalise(lines: list[str]) -> list[str]:
    return [DURATION.sub("N", line.rstrip()) for line in lines]


def printed(text: str, home: Path) -> list[str]:
    """What a reader sees: the scratch HOME as ~, no progress lines, no trailing blank lines."""
    lines = [line.rstrip() for line in text.replace(str(home), "~").splitlines() if not PROGRESS.match(line)]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def checkout_like(folder: Path) -> Path:
    """A scratch folder that reads like the repository's root: a link to each top-level entry."""
    folder.mkdir()
    for entry in ROOT.iterdir():
        if entry.name not in (".git", ".venv", "build", "dist") and not entry.name.endswith(".sqlite"):
            (folder / entry.name).symlink_to(entry)
    return folder


def run_console(examples: list[Example], home: Path) -> list[list[str]]:
    """Each command's output: one shell for the page, from a checkout-like scratch folder."""
    script = "".join(f"echo '{MARK.format(n)}'\n{{ {e.source}\n}} 2>&1\n" for n, e in enumerate(examples))
    env = {k: v for k, v in os.environ.items() if not k.startswith("DIARIST_")}
    env.update(HOME=str(home), COLUMNS="100", ORT_DISABLE_TELEMETRY="1",
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}")
    out = subprocess.run(["bash", "-c", script], cwd=checkout_like(home / "work"), env=env, capture_output=True, text=True, timeout=900)
    parts = re.split(r"^@@diarist-docs-output (\d+)@@\n", out.stdout, flags=re.M)
    outputs = {int(n): text for n, text in zip(parts[1::2], parts[2::2])}
    return [printed(outputs.get(n, ""), home) for n in range(len(examples))]


def run_pycon(examples: list[Example], home: Path, monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Each statement's output, as the interactive interpreter prints it, in one namespace."""
    monkeypatch.chdir(checkout_like(home / "work"))
    monkeypatch.setenv("HOME", str(home))
    for name in [k for k in os.environ if k.startswith("DIARIST_")]:
        monkeypatch.delenv(name)
    namespace: dict = {"__name__": "__docs__"}
    outputs = []
    for example in examples:
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            try:
                exec(compile(example.source, "<docs>", "single"), namespace)  # noqa: S102
            except Exception:
                kind, value, _ = sys.exc_info()
                print("Traceback (most recent call last):\n  ...")
                print("".join(traceback.format_exception_only(kind, value)).rstrip())
        outputs.append(printed(buffer.getvalue(), home))
    return outputs


def page_outputs(page: Path, blocks: list[Block], home: Path, monkeypatch) -> dict[int, list[list[str]]]:
    """Every block's outputs, keyed by the block's fence line."""
    console = [e for b in blocks if b.kind == "console" for e in b.examples]
    pycon = [e for b in blocks if b.kind == "pycon" for e in b.examples]
    got = iter(run_console(console, home / "console") if console else [])
    got_py = iter(run_pycon(pycon, home / "pycon", monkeypatch) if pycon else [])
    return {b.start: [next(got) if b.kind == "console" else next(got_py) for _ in b.examples] for b in blocks}


def pages_with_blocks() -> list[Path]:
    """The pages whose blocks are run (docs/cli.md is generated, and checked whole below)."""
    return [p for p in PAGES if p.name != "cli.md" and shown_blocks(p.read_text(encoding="utf-8").splitlines())]


@pytest.mark.model
@pytest.mark.parametrize("page", pages_with_blocks(), ids=lambda p: str(p.relative_to(ROOT)))
@pytest.mark.slow
def test_every_shown_output_is_what_the_command_prints(page: Path, tmp_path: Path, monkeypatch, request) -> None:
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks = shown_blocks(lines)
    (tmp_path / "console").mkdir()
    (tmp_path / "pycon").mkdir()
    outputs = page_outputs(page, blocks, tmp_path, monkeypatch)
    if request.config.getoption("--update-docs"):
        _rewrite(page, lines, blocks, outputs)
        return
    wrong = []
    for block in blocks:
        for example, got in zip(block.examples, outputs[block.start]):
            want = normalise(example.shown)
            have = normalise(got[: len(want)] if example.prefix else got)
            if want != have:
                wrong.append(f"{page.name} line {example.first + 1}: {example.source!r}\n"
                             f"--- shown\n" + "\n".join(example.shown) + "\n--- printed\n" + "\n".join(got))
    assert not wrong, ("shown outputs differ (python -m pytest tests/test_docs.py --update-docs rewrites them):\n\n"
                       + "\n\n".join(wrong))


def _rewrite(page: Path, lines: list[str], blocks: list[Block], outputs: dict[int, list[list[str]]]) -> None:
    """Put each example's printed output in place of the shown one, last first (line numbers hold)."""
    examples = [(b.kind, e, got) for b in blocks for e, got in zip(b.examples, outputs[b.start])]
    for kind, example, got in sorted(examples, key=lambda entry: entry[1].first, reverse=True):
        new = got[: len(example.shown)] if example.prefix else got
        # a line that differs only where normalised (a duration) stays as shown: no churn
        new = [old if i < len(example.shown) and normalise([old]) == normalise([line]) else line
               for i, (line, old) in enumerate(zip(new, example.shown + [""] * len(new)))]
        if kind == "pycon":  # doctest's way: a blank line would end the output
            new = [line or "<BLANKLINE>" for line in new]
        lines[example.first : example.first + len(example.shown)] = new
    page.write_text("\n".join(lines) + "\n", encoding="utf-8")


# -- the parser itself ----------------------------------------------------------------------------


def test_the_parser_reads_commands_outputs_and_prefixes() -> None:
    lines = ["text", "```console", "$ diarist a \\", "  --b", "one", "two", "$ diarist c", "x", "...", "```",
             "```bash", "$ not run", "```", "```pycon", ">>> 1 + 1", "2", ">>> for i in range(2):", "...     print(i)",
             "0", "1", "```"]
    console, pycon = shown_blocks(lines)
    assert [(e.source, e.shown, e.first, e.prefix) for e in console.examples] == [
        ("diarist a \\\n  --b", ["one", "two"], 4, False), ("diarist c", ["x"], 7, True)]
    assert [(e.source.strip(), e.shown, e.first) for e in pycon.examples] == [
        ("1 + 1", ["2"], 15), ("for i in range(2):\n    print(i)", ["0", "1"], 18)]


def test_a_wrong_output_is_seen(tmp_path, monkeypatch) -> None:
    """The comparison is not vacuous: a changed line, a missing line and an extra line all differ."""
    home = tmp_path
    (home / "console").mkdir()
    got = run_console([Example("echo one; echo 'took 0.5s'", [], 0)], home / "console")[0]
    assert normalise(got) == normalise(["one", "took 9.9s"])
    assert normalise(got) != normalise(["one", "took 9.9s", "two"])
    assert normalise(got) != normalise(["one"]) and normalise(got) != normalise(["uno", "took 0.5s"])


# -- every command has help and is documented --------------------------------------------------------


def _commands() -> list[tuple[str, click.Command]]:
    from diarist.cli import main

    out = []

    def walk(path: str, command: click.Command) -> None:
        out.append((path, command))
        if isinstance(command, click.Group):  # list_commands/get_command: the lazy group loads each
            ctx = click.Context(command, info_name=path.rsplit(" ", 1)[-1])
            for name in sorted(command.list_commands(ctx)):
                walk(f"{path} {name}", command.get_command(ctx, name))

    walk("diarist", main)
    return out


CLI_PAGE = ROOT / "docs" / "cli.md"
CLI_INTRO = """# The `diarist` command

Every command and its `--help`, as it prints it (generated: tests/test_docs.py builds this page
from the commands and compares; `python -m pytest tests/test_docs.py --update-docs` rewrites it).
The README's [everyday commands](../README.md#everyday-commands) say which to reach for first.
"""


#: Prints every command's --help as JSON, in a process of its own: click keeps the help option a
#: command first made, and a test that invoked a subcommand without the group (no -h) changes it.
HELP_SCRIPT = """
import json, sys
from click.testing import CliRunner
from diarist.cli import main
out = {}
for path in json.loads(sys.argv[1]):
    result = CliRunner().invoke(main, path.split()[1:] + ["--help"], prog_name="diarist", terminal_width=100)
    out[path] = [result.exit_code, result.output]
print(json.dumps(out))
"""


def cli_reference() -> str:
    """docs/cli.md: each command's --help, 100 columns wide, in the order of the command tree."""
    paths = [path for path, _ in _commands()]
    env = {k: v for k, v in os.environ.items() if not k.startswith("DIARIST_")}
    run = subprocess.run([sys.executable, "-c", HELP_SCRIPT, json.dumps(paths)], env=env, capture_output=True,
                         text=True, timeout=300, check=True)
    helps = json.loads(run.stdout)
    parts = [CLI_INTRO]
    for path in paths:
        code, output = helps[path]
        assert code == 0, (path, output)
        help_text = "\n".join(line.rstrip() for line in output.rstrip().splitlines())
        parts.append(f"## {path}\n\n```console\n$ {path} --help\n{help_text}\n```\n")
    return "\n".join(parts)


#: Options still without help, in modules this test's author did not own (to be given help there).
WITHOUT_HELP_YET = {("diarist bench pools", "dataset"), ("diarist serve", "log_level")}


@pytest.mark.parametrize("path", [p for p, _ in _commands()])
def test_every_command_has_help(path: str) -> None:
    command = dict(_commands())[path]
    assert (command.help or "").strip(), f"{path} has no help"
    silent = [p.name for p in command.params
              if isinstance(p, click.Option) and not p.help and (path, p.name) not in WITHOUT_HELP_YET]
    assert not silent, f"{path}: options without help: {silent}"


@pytest.mark.slow
def test_the_cli_page_is_every_commands_help(request) -> None:
    """docs/cli.md documents every command: it is exactly what their --help prints."""
    expected = cli_reference()
    if request.config.getoption("--update-docs"):
        CLI_PAGE.write_text(expected, encoding="utf-8")
        return
    assert CLI_PAGE.read_text(encoding="utf-8") == expected, (
        "docs/cli.md is not the commands' help: python -m pytest tests/test_docs.py --update-docs")


def test_every_registered_name_is_in_the_extending_page() -> None:
    from diarist.embed import EMBEDDERS
    from diarist.importers import IMPORTERS
    from diarist.read.search import STAGES
    from diarist.rerank import RERANKERS
    from diarist.store.open import STORES

    page = (ROOT / "docs" / "extending.md").read_text(encoding="utf-8")
    missing = [f"{kind} {name}" for kind, registry in
               (("embedder", EMBEDDERS), ("reranker", RERANKERS), ("store", STORES), ("importer", IMPORTERS),
                ("read stage", STAGES))
               for name in registry if not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", page)]
    assert not missing, "docs/extending.md does not name: " + ", ".join(missing)


def test_one_version_everywhere() -> None:
    """pyproject.toml, diarist.__version__ (what --version prints) and the changelog's newest entry agree."""
    import tomllib

    import diarist

    version = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    newest = re.search(r"^## (\S+)", (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"), flags=re.M)
    assert diarist.__version__ == version and newest and newest.group(1) == version


def test_every_relative_link_leads_to_a_file() -> None:
    """Links between the pages (README.md, docs/) name files that exist; pages moved must not strand them.
    docs/agents.md is another branch's page, linked ahead of its merge."""
    broken = []
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (page.parent / target).exists() and (page.parent / target).name != "agents.md":
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, broken
