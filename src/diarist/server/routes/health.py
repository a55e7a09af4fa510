"""``/health``: retrieval checked end to end, with no key and no app names shown.

The check embeds a probe and reads each app's newest chunk: real work, and ``/health`` needs no
key. So one check runs at a time and its answer is shared for ``HEALTH_CACHE_SECONDS``: any
number of clients polling it cost at most one check per window (8 pollers quadrupled a keyed
search's p50 at 100k chunks when each poll ran its own). The answer says how old it is
(``age_s``).
"""

import threading
import time
from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from ...memory import Memory

HEALTH_MAX_APPS = 10  # the unauthenticated /health self-checks at most this many apps
HEALTH_CACHE_SECONDS = 2.0  # a check's answer is given again for this long


def add_routes(api: FastAPI, memory: Memory, *, health_max_apps: int = HEALTH_MAX_APPS) -> None:
    lock = threading.Lock()
    last: dict[str, Any] = {"at": None, "body": None, "status": 200}

    def fresh_check() -> None:
        names = memory.apps()[-health_max_apps:] if health_max_apps else []
        report = memory.health(names, deep=False)  # no whole-matrix recall check (doctor has it)
        body = report.to_dict(app_names=False)
        body["apps_total"] = len(memory.apps())
        body["embedder"] = memory.embedder.model_id
        last.update(at=time.monotonic(), body=body, status=200 if report.ok else 503)

    def answer() -> JSONResponse:
        body, status, at = last["body"], last["status"], last["at"]
        return JSONResponse({**body, "age_s": round(time.monotonic() - at, 3)}, status)

    def checked() -> JSONResponse:
        with lock:  # callers during a check wait for it, and take its answer
            if last["at"] is None or time.monotonic() - last["at"] >= HEALTH_CACHE_SECONDS:
                fresh_check()
            return answer()

    @api.get("/health", tags=["health"], responses={503: {"description": "Retrieval is failing"}})
    async def health() -> JSONResponse:
        """Embed a known probe and find it through each channel of a scratch store, then check each app's newest chunk (up to a cap): its stored vector matches the embedder and the keyword index holds its words; the same work at any size. 200 when all of it works, 503 otherwise. One check runs at a time and its answer serves every request for 2 s (`age_s` says how old it is). No key needed; app names are not shown."""
        at = last["at"]
        if at is not None and time.monotonic() - at < HEALTH_CACHE_SECONDS:
            return answer()  # in the event loop: a poll of a fresh answer takes no worker thread
        return await run_in_threadpool(checked)
