"""Start-up: ``import diarist``, ``diarist --version`` and ``diarist --help`` load neither numpy
nor onnxruntime (each is checked in a fresh interpreter, in sys.modules, not by timing), and the
command list ``--help`` shows without importing the commands matches the commands themselves."""

from __future__ import annotations

import json
import subprocess
import sys

import click
from click.testing import CliRunner
import pytest

HEAVY = ("numpy", "onnxruntime", "diarist.memory", "diarist.store", "diarist.embed")


def _loaded_after(code: str) -> list[str]:
    probe = (f"import sys\n{code}\n"
             f"import json; print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def _cli(*args: str) -> str:
    return f"from diarist.cli import main\ntry:\n    main({list(args)!r})\nexcept SystemExit:\n    pass"


def test_import_diarist_loads_nothing_heavy():
    assert _loaded_after("import diarist") == []


@pytest.mark.parametrize("args", [("--version",), ("--help",), ("hooks", "--help")])
def test_version_and_help_load_nothing_heavy(args):
    assert _loaded_after(_cli(*args)) == []


def test_a_public_name_still_imports_on_use():
    assert _loaded_after("from diarist import Memory") != []
    import diarist

    assert diarist.Memory.__name__ == "Memory"
    with pytest.raises(AttributeError):
        diarist.no_such_name  # noqa: B018


def test_version_prints_the_package_version():
    from diarist import __version__
    from diarist.cli import main

    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0 and result.output.strip() == f"diarist, version {__version__}"


def test_the_help_summaries_are_the_commands_own():
    """``--help`` lists COMMANDS' summaries without importing the commands: each must be what the
    loaded command says of itself, so an edited docstring cannot leave a stale line."""
    from diarist.cli import COMMANDS, load_command

    for name, (module, summary) in COMMANDS.items():
        command = load_command(name, module)
        assert command.get_short_help_str(limit=10**6) == summary, name


def test_every_command_runs_its_help():
    from diarist.cli import COMMANDS, main

    runner = CliRunner()
    for name in COMMANDS:
        result = runner.invoke(main, [name, "--help"])
        assert result.exit_code == 0, (name, result.output)


def test_every_command_registered_the_eager_way_is_listed():
    """A command added to diarist.cli.commands (its own group and _register_other_commands) runs
    through the lazy group's fallback, but --help lists only COMMANDS: it needs its line there."""
    import click

    from diarist.cli import COMMANDS
    from diarist.cli.commands import main as eager

    missing = sorted(set(eager.list_commands(click.Context(eager))) - set(COMMANDS))
    assert not missing, f"add these to diarist.cli.COMMANDS: {missing}"
