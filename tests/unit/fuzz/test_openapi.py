"""schemathesis over both OpenAPI documents, in process through their ASGI apps, with a valid
token: every operation of the fleet's API (``driftwave api``) and of the agent's HTTP API gets
generated requests, valid and invalid; no response is a 5xx, and the answers to valid requests
keep the schema (documented status, content type and body).

Bounded: a fixed number of examples per operation, no shrinking past a deadline."""

from __future__ import annotations

import contextlib
import importlib
import pkgutil
from pathlib import Path
from typing import Any

import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import Case, GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.result import Ok
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from agent.server import create_app as agent_app
from common.auth import hash_token
from fleet.api.app import create_app as fleet_app
from tests.unit.agent.server.helpers import traced_agent
from tests.unit.fleet.api.helpers import traced_context


def _import_plugin_modules() -> None:
    """Import now, while the session collects on one thread, every module schemathesis (and the
    few of hypothesis) would import lazily mid-test. Both are pytest plugins, so pytest's
    assertion rewriting parses their modules with ``ast.parse`` on first import; Python 3.11's
    AST state is shared between threads, and a parse while another thread of the test process
    parses fails with "AST constructor recursion depth mismatch" (seen once in a full run)."""
    for module in pkgutil.walk_packages(schemathesis.__path__, "schemathesis."):
        if not module.name.endswith("__main__"):
            with contextlib.suppress(Exception):
                importlib.import_module(module.name)
    for name in (
        "hypothesis.internal.conjecture.optimiser",
        "hypothesis.strategies._internal.flatmapped",
        "hypothesis.strategies._internal.random",
        "hypothesis.strategies._internal.regex",
    ):
        importlib.import_module(name)


_import_plugin_modules()
TOKEN = "fuzz-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
EXAMPLES = 15
CHECKS = (
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
)
NEGATIVE_CHECKS = (not_a_server_error, content_type_conformance, response_schema_conformance)
"""For requests that break the schema: any 4xx is a fair answer (a body that is not JSON is a 400
whatever the operation documents), but never a 5xx or a malformed error document."""
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
    database=None,
)


def fuzz(app: Any) -> int:
    """Every operation of ``app``'s OpenAPI document, :data:`EXAMPLES` generated requests each,
    each checked by :data:`CHECKS`; the number of requests sent."""
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    sent = 0
    for result in schema.get_all_operations():
        assert isinstance(result, Ok), result
        operation = result.ok()

        @FUZZ
        @given(
            case=operation.as_strategy(GenerationMode.POSITIVE)
            | operation.as_strategy(GenerationMode.NEGATIVE)
        )
        def call(case: Case[Any]) -> None:
            nonlocal sent
            sent += 1
            positive = case.meta is None or case.meta.generation.mode == GenerationMode.POSITIVE
            case.call_and_validate(
                headers=AUTH, checks=list(CHECKS if positive else NEGATIVE_CHECKS)
            )

        call()
    return sent


def test_fleet_api_never_fails_and_keeps_its_schema(tmp_path: Path) -> None:
    app = fleet_app(traced_context(tmp_path).ctx, token_hashes={hash_token(TOKEN)})
    assert fuzz(app) >= EXAMPLES * 10


def test_agent_api_never_fails_and_keeps_its_schema() -> None:
    app = agent_app(traced_agent().service, token_hashes={hash_token(TOKEN)})
    assert fuzz(app) >= EXAMPLES * 5
