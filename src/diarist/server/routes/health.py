"""``/health``: retrieval checked end to end, with no key and no app names shown."""

from fastapi import FastAPI
from fastapi.responses import JSONResponse

from ...health import check
from ...memory import Memory

HEALTH_MAX_APPS = 10  # the unauthenticated /health self-checks at most this many apps


def add_routes(api: FastAPI, memory: Memory, *, health_max_apps: int = HEALTH_MAX_APPS) -> None:
    @api.get("/health", tags=["health"], responses={503: {"description": "Retrieval is failing"}})
    def health() -> JSONResponse:
        """Embed a known probe and find it through each channel of a scratch store, then check each app's newest chunk (up to a cap): its stored vector matches the embedder and the keyword index holds its words; the same work at any size. 200 when all of it works, 503 otherwise. No key needed; app names are not shown."""
        names = memory.apps()[-health_max_apps:] if health_max_apps else []
        report = check(memory, apps=names, deep=False)  # no whole-matrix recall check (doctor has it)
        body = report.to_dict(app_names=False)
        body["apps_total"] = len(memory.apps())
        body["embedder"] = memory.embedder.model_id
        return JSONResponse(body, 200 if report.ok else 503)
