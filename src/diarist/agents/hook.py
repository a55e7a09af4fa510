"""The command an agent runs on a hook event: ``python -m diarist.agents.hook AGENT EVENT
[--db DB] [--app APP] [--budget TOKENS]`` (``diarist hook`` is the same).

It reads the agent's JSON event on standard input, and prints exactly what the agent's protocol
documents (``protocols``): the context block for the prompt, the facts the user asked to keep,
or nothing. The resident process answers when it is up (``client``, a few milliseconds); else the
work is done here (``recall``, the model loaded for this one run) and the resident process is
started in the background for the next prompt. Whatever goes wrong (a bad event, no database, a
locked one, a crash) is written to the log under the data folder and the agent gets the empty
answer, exit status 0; past the deadline (``$DIARIST_HOOK_DEADLINE``, 4 s) the same, so a prompt
is never held up. Standard library only until the work has to be done in-process.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

from .paths import db_location, log_file, private_dir, socket_path
from .protocols import AGENTS, CONTEXT, DEFAULT_DEADLINE_S, FACTS, SYNC, Protocol

DEFAULT_APP = "default"  # settings.DEFAULT_APP, without importing settings (and numpy) here
DEFAULT_BUDGET_TOKENS = 1000
#: A resident process being started is not started again within this many seconds.
START_GRACE_S = 60.0

USAGE = ("usage: python -m diarist.agents.hook AGENT EVENT [--db DB] [--app APP] [--budget TOKENS] "
         "[--trim auto|pointers|lines|none]")
TRIMS = ("auto", "pointers", "lines", "none")


def log(message: str) -> None:
    """One line in the hooks' log (never on the agent's screen)."""
    try:
        path = log_file()
        private_dir(path.parent)
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {message}\n")
    except OSError:
        pass


def parse_args(argv: list[str]) -> dict:
    if len(argv) < 2 or len(argv) % 2:
        raise ValueError(USAGE)
    options = {"agent": argv[0], "event": argv[1], "db": None, "app": DEFAULT_APP, "budget": DEFAULT_BUDGET_TOKENS,
               "trim": "auto"}
    for flag, value in zip(argv[2::2], argv[3::2]):
        if flag not in ("--db", "--app", "--budget", "--trim"):
            raise ValueError(f"unknown option {flag!r}; {USAGE}")
        options[flag[2:]] = int(value) if flag == "--budget" else value
    if options["trim"] not in TRIMS:
        raise ValueError(f"--trim must be one of {', '.join(TRIMS)}, not {options['trim']!r}")
    if options["agent"] not in AGENTS:
        raise ValueError(f"unknown agent {options['agent']!r} (known: {', '.join(AGENTS)})")
    return options


def start_resident(location: str) -> None:
    """Start the resident process for ``location`` in the background, unless one is starting."""
    if os.environ.get("DIARIST_HOOK_RESIDENT", "1").strip().lower() in ("0", "no", "false", "off"):
        return
    marker = socket_path(location).with_suffix(".starting")
    try:
        if time.time() - marker.stat().st_mtime < START_GRACE_S:
            return
    except OSError:
        pass
    private_dir(marker.parent)
    marker.touch()
    spawn([sys.executable, "-m", "diarist.server.resident", "--db", location])


def spawn(command: list[str]) -> None:
    """Run ``command`` detached (its own session: the agent's exit does not end it), output to the log."""
    import subprocess

    private_dir(log_file().parent)
    with open(log_file(), "a", encoding="utf-8") as out:
        subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True,
                         close_fds=True)


def recall(action: str, location: str, app: str, payload: dict, budget: int, trim: str, deadline: float) -> str:
    """The text the agent is given for ``action``: from the resident process, else in-process."""
    from . import client

    if action == CONTEXT:
        prompt = payload.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            return ""
        try:
            return client.context(location, app, prompt, budget_tokens=budget, trim=trim,
                                  timeout=max(0.05, deadline - time.monotonic()))
        except client.Unavailable:
            start_resident(location)
        except client.Refused as exc:
            log(f"resident process refused: {exc}; answering in-process")
        from . import recall as local

        return local.context(location, app, prompt, budget_tokens=budget, trim=trim)
    if action == FACTS:
        from .recall import FACTS_LIMIT, facts_block

        try:
            return facts_block(client.facts(location, app, limit=FACTS_LIMIT,
                                            timeout=max(0.05, deadline - time.monotonic())))
        except client.Unavailable:
            start_resident(location)
        except client.Refused as exc:
            log(f"resident process refused: {exc}; answering in-process")
        from . import recall as local

        return facts_block(local.facts(location, app))
    raise ValueError(f"unknown action {action!r}")


def sync_transcripts(protocol: Protocol, location: str, app: str) -> None:
    """Bring the agent's transcripts folder into memory, in the background (the session is ending)."""
    if not protocol.transcripts:
        return
    folder = os.path.join(os.path.expanduser("~"), protocol.transcripts)
    if not os.path.isdir(folder):
        log(f"{protocol.name}: no transcripts folder {folder}; nothing to sync")
        return
    spawn([sys.executable, "-m", "diarist.cli", "sync", folder, "--app", app, "--db", location])


def answer(options: dict, raw: str, deadline: float) -> str:
    """What the hook prints for this event (the work, within the deadline)."""
    protocol = AGENTS[options["agent"]]
    event = options["event"]
    action = protocol.events.get(event)
    if action is None:
        raise ValueError(f"{protocol.title} has no diarist hook for event {event!r}")
    payload = json.loads(raw) if raw.strip() else {}
    if not isinstance(payload, dict):
        raise ValueError(f"the event is not a JSON object: {raw[:200]!r}")
    location = db_location(options["db"])
    if action == SYNC:
        sync_transcripts(protocol, location, options["app"])
        return protocol.empty_output
    if "://" not in location and not os.path.exists(location):
        log(f"{protocol.name} {event}: no database at {location} yet; nothing to recall")
        return protocol.empty_output
    result: dict = {}

    def work() -> None:
        try:
            result["text"] = recall(action, location, options["app"], payload, options["budget"], options["trim"],
                                    deadline)
        except BaseException as exc:  # noqa: BLE001 - every failure goes to the log, none to the agent
            result["error"] = exc

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(max(0.0, deadline - time.monotonic()))
    if worker.is_alive():
        log(f"{protocol.name} {event}: no answer within the deadline; the agent got an empty context")
        return protocol.empty_output
    if "error" in result:
        raise result["error"]
    return protocol.output(event, result["text"])


def main(argv: list[str] | None = None) -> int:
    started = time.monotonic()
    argv = sys.argv[1:] if argv is None else argv
    try:
        options = parse_args(argv)
    except ValueError as exc:  # a mistyped command in the agent's settings: say so where it is run
        print(f"diarist hook: {exc}", file=sys.stderr)
        return 2
    protocol = AGENTS[options["agent"]]
    deadline = started + float(os.environ.get("DIARIST_HOOK_DEADLINE") or DEFAULT_DEADLINE_S)
    try:
        out = answer(options, sys.stdin.read(), deadline)
    except BaseException as exc:  # noqa: BLE001 - the agent gets the empty answer, the log the reason
        import traceback

        log(f"{protocol.name} {options['event']}: {type(exc).__name__}: {exc}\n"
            + "".join(traceback.format_exception(exc)).rstrip())
        out = protocol.empty_output
    if out:
        sys.stdout.write(out + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    code = main()
    # A worker past the deadline may still be loading the model: do not wait for it.
    os._exit(code)
