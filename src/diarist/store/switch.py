"""A switch of embedding model under way (``diarist migrate DB --embedder NAME``, ``diarist.reembed``):
what the database records of it, and the refusal to open a database part way through one.

Half-switched, a database holds vectors of two models that cannot be compared: the model is
resolved through ``refuse_half_switched`` (``write.writer.fix_embedder_and_plan``), so neither a
search nor a write opens it, and ``diarist migrate`` will not copy it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..errors import DiaristError
from .base import Store

#: The meta key that marks a switch under way (JSON: ``SwitchState``).
SWITCH_KEY = "embedder_switch"


class HalfSwitched(DiaristError):
    """The database is part way through a switch of embedding model; nothing may search it."""

    status, code = 409, "half_switched"


@dataclass(frozen=True)
class SwitchState:
    """What ``SWITCH_KEY`` records: the model asked for and the mark below which chunks are old."""

    spec: str
    model_id: str
    dim: int
    previous: str | None  # the model the database was built with
    mark: int  # the highest chunk id stored when the switch began
    items: int  # items to rewrite when it began

    def to_json(self) -> str:
        return json.dumps(self.__dict__, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "SwitchState":
        return cls(**json.loads(text))


def switch_command(location: str, spec: str) -> str:
    """The command that switches (or finishes switching) the database at ``location``."""
    return f"diarist migrate {location} --embedder {spec}"


def pending_switch(store: Store) -> SwitchState | None:
    """The switch under way in this database, or None."""
    recorded = store.get_meta(SWITCH_KEY)
    return SwitchState.from_json(recorded) if recorded else None


def refuse_half_switched(store: Store) -> None:
    """Raise ``HalfSwitched`` naming the command that finishes the switch, when one is under way."""
    state = pending_switch(store)
    if state is not None:
        raise HalfSwitched(
            f"{store.location} is part way through a switch of embedding model from {state.previous!r} to "
            f"{state.model_id!r}: its vectors are of two models and cannot be searched; finish it with "
            f"`{switch_command(store.location, state.spec)}`"
        )


