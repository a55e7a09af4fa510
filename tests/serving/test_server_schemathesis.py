"""Schemathesis against the live OpenAPI spec over real HTTP: no server errors, responses match the spec."""

from __future__ import annotations

import pytest
import schemathesis
from schemathesis import GenerationMode
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)
from test_server_support import ServerThread

from diarist.memory import Memory
from diarist.server.app import create_app
from diarist.keys import KeyStore

APP = "fuzz"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    memory = Memory(tmp_path_factory.mktemp("fuzz") / "fuzz.sqlite", embedder="hash")
    key = KeyStore(memory.store).create(APP)[0]
    memory.add_session([{"role": "user", "content": "Seed conversation about a cat called Admon."}],
                       app=APP, session_id="seed")
    memory.add_fact("Seed fact: the user is vegetarian.", app=APP, fact_id="seed")
    with ServerThread(create_app(memory, max_body_bytes=256 * 1024)) as srv:
        srv.key = key
        yield srv
    memory.close()


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
@pytest.mark.slow
def test_api_conforms_and_never_errors(served, mode):
    """Every operation, positive and negative data; the app path parameter is pinned to the key's app
    (auth has its own tests), so generated requests reach the real routes, not only the 403 wall."""
    schema = schemathesis.openapi.from_url(f"{served.url}/openapi.json")
    auth = {"Authorization": f"Bearer {served.key}"}
    checks = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 14
    skipped = 0
    for operation in operations:
        has_app = any(p.name == "app" for p in operation.path_parameters)
        strategy = operation.as_strategy(mode, path_parameters={"app": APP} if has_app else None)

        @settings(max_examples=5, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate])
        @given(case=strategy)
        def run(case):
            case.call_and_validate(headers=auth, checks=checks, timeout=60)

        try:
            run()
        except Unsatisfiable:  # nothing in this operation can be made invalid (e.g. GET /health)
            assert mode == GenerationMode.NEGATIVE
            skipped += 1
    assert skipped < len(operations) // 2
