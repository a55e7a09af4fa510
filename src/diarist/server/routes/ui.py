"""The web inspector at /ui (diarist.ui), behind an API key: each session sees its key's app."""

from fastapi import FastAPI

from ...memory import Memory


def mount_inspector(api: FastAPI, memory: Memory) -> None:
    from ...ui import PREFIX, create_ui

    api.mount(PREFIX, create_ui(memory, keyed=True), name="ui")
