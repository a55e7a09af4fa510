"""The HTTP API's routes, one module per resource; ``add_routes`` puts them all on an app."""

from fastapi import FastAPI

from ...memory import Memory
from . import apps, context, facts, health, search, sessions
from .common import app_scope


def add_routes(api: FastAPI, memory: Memory, *, health_max_apps: int) -> None:
    """Every route under ``/v1/apps/{app}`` (each needing that app's key), then ``/health``."""
    app = app_scope(memory.keys)
    for resource in (sessions, facts, search, context, apps):
        resource.add_routes(api, memory, app)
    health.add_routes(api, memory, health_max_apps=health_max_apps)
