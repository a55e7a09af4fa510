"""Bringing a file in (the upload, through the import funnel as ``diarist ingest``) and taking an
app out (its JSONL export)."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from starlette.datastructures import UploadFile
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from ...errors import InvalidInput
from ...memory import Memory
from .common import Ctx, Site, q

_UNSAFE_NAME = re.compile(r"[^\w.-]+")


def import_file(site: Site, ctx: Ctx) -> Response:
    app = site.grant(ctx, ctx.request.path_params["app"] if "app" in ctx.request.path_params else ctx.field("app").strip())
    upload = ctx.form.get("file") if ctx.form is not None else None
    if not isinstance(upload, UploadFile) or not upload.filename:
        raise InvalidInput("choose a file to import")
    report = ingest(site.memory, app, upload)
    return site.redirect(ctx, f"/apps/{q(app)}", **report)


def export_file(site: Site, ctx: Ctx) -> Response:
    from ...export import jsonl_lines

    app = site.grant(ctx, ctx.request.path_params["app"])
    site.memory.export(app=app)  # refuses an unknown app before the download starts
    name = _UNSAFE_NAME.sub("_", app).strip("._") or "app"
    return StreamingResponse((line + "\n" for line in jsonl_lines(site.memory, app)), media_type="application/x-ndjson",
                             headers={"Content-Disposition": f'attachment; filename="{name}.jsonl"'})


def import_report(ctx: Ctx) -> dict[str, int] | None:
    """The counts an import redirected with (numbers only: nothing a link could make the page say)."""
    found = {name: ctx.param(name) for name in ("added", "replaced", "unchanged", "facts")}
    if not any(found.values()):
        return None
    return {name: int(v) if v.isdigit() else 0 for name, v in found.items()}


def ingest(memory: Memory, app: str, upload: UploadFile) -> dict[str, int]:
    """Read an uploaded file with the importers (format detected as ``diarist ingest`` does) and
    store it through the import funnel (``importers.load``), as ``diarist ingest`` does."""
    from ...importers import read_all
    from ...importers.load import check_imported, store_imported

    name = _UNSAFE_NAME.sub("_", Path(upload.filename or "upload").name).strip("._") or "upload"
    with tempfile.TemporaryDirectory(prefix="diarist-ui-") as folder:
        path = Path(folder) / name
        with open(path, "wb") as out:
            upload.file.seek(0)
            while block := upload.file.read(1 << 20):
                out.write(block)
        try:
            imported = read_all(path)
            check_imported(imported, name)
        except InvalidInput as exc:  # named by the file's own name, never the server's temporary folder
            raise InvalidInput(str(exc).replace(str(path), name).replace(folder, "")) from None
    stored = store_imported(memory, imported, app=app)
    report, facts = stored.sessions, stored.facts
    return {"added": len(report.added), "replaced": len(report.replaced), "unchanged": len(report.unchanged),
            "facts": len(facts.added) if facts else 0}


def routes(site: Site) -> list[Route]:
    return [
        Route("/import", site.endpoint(import_file, post=True), methods=["POST"]),
        Route("/apps/{app}/import", site.endpoint(import_file, post=True), methods=["POST"]),
        Route("/apps/{app}/export.jsonl", site.endpoint(export_file), methods=["GET"]),
    ]
