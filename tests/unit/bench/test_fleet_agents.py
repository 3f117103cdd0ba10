"""The lightweight clusters of the fleet benchmark answer with the agent's own documents."""

from __future__ import annotations

import json
from typing import Any

from bench.fleet_agents import OLD_IMAGE, LightAgents, image_of
from common.wire.status import StatusDocument
from common.wire.version import Capability
from common.wire.waves import StatusWithWave, WaveDocument

TARGET = {"amiSelectorTerms": [{"alias": "al2023@v20251216"}]}


def _call(agents: LightAgents, method: str, path: str, body: object = None) -> tuple[int, Any]:
    raw = json.dumps(body).encode() if body is not None else b""
    status, answer = agents.handle(method, path, "Bearer t", raw)
    return status, answer


def test_status_and_waves_are_the_agents_documents_and_a_wave_converges_at_once() -> None:
    agents = LightAgents("t", nodes=7)
    status, before = _call(agents, "GET", "/c/dev-1/v1/status")
    assert status == 200
    StatusDocument.model_validate(before, extra="forbid")
    assert before["nodesByImage"] == {OLD_IMAGE: 7}
    status, wave = _call(agents, "PUT", "/c/dev-1/v1/waves/w1", {"target": TARGET, "rollout": "r"})
    assert status == 200
    WaveDocument.model_validate(wave, extra="forbid")
    assert wave["phase"] == "converged"
    assert wave["observed"]["holds"] is True
    assert wave["imagesBefore"] == [OLD_IMAGE]
    _, after = _call(agents, "GET", "/c/dev-1/v1/status")
    assert after["nodesByImage"] == {image_of(TARGET["amiSelectorTerms"]): 7}
    again = _call(agents, "PUT", "/c/dev-1/v1/waves/w1", {"target": TARGET})[1]
    assert again["history"] == wave["history"]  # applying twice applies nothing twice


def test_the_status_with_a_wave_is_the_agents_document_with_the_wave_or_null() -> None:
    agents = LightAgents("t", nodes=2)
    _call(agents, "PUT", "/c/a/v1/waves/w1", {"target": TARGET})
    status, both = _call(agents, "GET", "/c/a/v1/status?wave=w1")
    assert status == 200
    read = StatusWithWave.model_validate(both, extra="forbid")
    assert read.agent is not None
    assert Capability.STATUS_WITH_WAVE in read.agent.capabilities
    assert both["wave"] == _call(agents, "GET", "/c/a/v1/waves/w1")[1]
    assert {k: v for k, v in both.items() if k not in ("wave", "time")} == {
        k: v for k, v in _call(agents, "GET", "/c/a/v1/status")[1].items() if k != "time"
    }
    assert _call(agents, "GET", "/c/a/v1/status?wave=other")[1]["wave"] is None


def test_a_checked_apply_is_refused_to_a_fleet_that_does_not_drive_it_else_applied() -> None:
    agents = LightAgents("t", nodes=2)
    code, refused = _call(agents, "PUT", "/c/a/v1/waves/w1/checked?fleet=0.9.0", {"target": TARGET})
    assert code == 409
    assert refused["error"]["code"] == "fleet_refused"
    assert _call(agents, "GET", "/c/a/v1/waves/w1")[0] == 404  # nothing applied
    code, both = _call(agents, "PUT", "/c/a/v1/waves/w1/checked?fleet=0.2.0", {"target": TARGET})
    assert code == 200
    read = StatusWithWave.model_validate(both, extra="forbid")
    assert read.wave is not None
    assert read.wave.phase == "converged"
    assert read.nodes_by_image == {image_of(TARGET["amiSelectorTerms"]): 2}


def test_a_rollback_restores_the_previous_selection() -> None:
    agents = LightAgents("t", nodes=3)
    _call(agents, "PUT", "/c/a/v1/waves/w1", {"target": TARGET})
    status, rolled = _call(agents, "POST", "/c/a/v1/waves/w1/rollback")
    assert status == 200
    WaveDocument.model_validate(rolled, extra="forbid")
    assert rolled["phase"] == "rolled-back"
    assert rolled["observed"]["expected"] == "previous"
    assert _call(agents, "GET", "/c/a/v1/status")[1]["nodesByImage"] == {OLD_IMAGE: 3}


def test_unknown_waves_routes_and_tokens_are_refused() -> None:
    agents = LightAgents("t", nodes=1)
    assert _call(agents, "GET", "/c/a/v1/waves/nope")[0] == 404
    assert _call(agents, "GET", "/elsewhere")[0] == 404
    assert agents.handle("GET", "/c/a/v1/status", "Bearer wrong", b"")[0] == 401
