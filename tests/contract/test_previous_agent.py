"""Today's fleet against the previous release's agent: every answer a 0.1 agent gives (its
golden documents, ``v0.1/``) travels through the fleet's HTTP gateway and is judged by the step
runner's rules without error; no 0.1 observation that does not hold is ever judged to hold; the
0.1 agent is one this fleet drives; and an answer carrying fields or values this fleet does not
know (a newer agent's) breaks nothing and verifies nothing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.trace import NoOpTracer
from pydantic import BaseModel

from common.wire.observation import Expected
from common.wire.waves import WaveRequest
from fleet.agentport import AgentRejected, AgentTarget, WaveUnknown, body_of
from fleet.gateway import HttpAgentGateway
from fleet.service.steps.compat import refusal
from fleet.service.steps.truth import judge, never_applied, record_of, rollback_body
from tests.contract.golden import CURRENT, PREVIOUS, documents, waves
from tests.support.jsonserver import JsonServer

ANSWERS = documents(PREVIOUS, "answer")
WAVES = waves(PREVIOUS)


@pytest.fixture(scope="module")
def agent() -> Iterator[JsonServer]:
    """A loopback agent answering with the 0.1 golden documents: the status, each wave document
    as a wave of its own name, and the two error documents with their HTTP status."""
    server = JsonServer()
    server.routes["/v1/status"] = (200, ANSWERS["answer-status"])
    for name, wave in WAVES.items():
        server.routes[f"/v1/waves/{name}"] = (200, wave)
    server.routes["/v1/waves/refused"] = (422, ANSWERS["answer-error-invalid"])
    server.routes["/v1/waves/unknown"] = (404, ANSWERS["answer-error-not-found"])
    with server.running():
        yield server


@pytest.fixture(scope="module")
def target(agent: JsonServer) -> AgentTarget:
    return AgentTarget("can-1", agent.url, "env:T")


@pytest.fixture(scope="module")
def gateway() -> Iterator[HttpAgentGateway]:
    http = HttpAgentGateway(NoOpTracer(), timeout=5.0, token_of=lambda _: "t")
    yield http
    http.close()


def test_the_status_of_a_0_1_agent_is_read_and_the_agent_is_driven(
    gateway: HttpAgentGateway, target: AgentTarget
) -> None:
    status = gateway.status(target)
    assert _sent(status) == ANSWERS["answer-status"]
    assert status.agent is None  # release 0.1 reported no version
    assert refusal("can-1", status) is None
    wave = WaveRequest.model_validate(documents(CURRENT, "request")["request-wave"])
    assert never_applied(status, wave) is None  # the status shows the cluster carrying it


def test_a_0_1_agent_is_asked_the_status_and_then_the_wave_in_a_second_call(
    agent: JsonServer, gateway: HttpAgentGateway, target: AgentTarget
) -> None:
    asked = len(agent.requests)
    status, wave = gateway.status_with_wave(target, "answer-wave-converged")
    assert [path for path, _ in agent.requests[asked:]] == [
        "/v1/status",
        "/v1/waves/answer-wave-converged",
    ]
    assert _sent(status) == ANSWERS["answer-status"]
    assert wave is not None
    assert _sent(wave)["targetImages"] == WAVES["answer-wave-converged"]["targetImages"]
    assert gateway.status_with_wave(target, "unknown")[1] is None


@pytest.mark.parametrize("name", sorted(WAVES))
def test_every_0_1_wave_document_is_read_and_judged_and_never_verified_unless_it_holds(
    gateway: HttpAgentGateway, target: AgentTarget, name: str
) -> None:
    wave = gateway.wave_status(target, name)
    read = _sent(wave)
    # a 0.1 observation has no verdict: the reader gives it one, holds or unknown
    given = (read["observed"].pop("state"), read["observed"].pop("code"))
    assert read == WAVES[name]
    holds = wave.observed.holds
    assert given == (("holds", "holds") if holds else ("unknown", "unknown"))
    for expected in (Expected.TARGET, Expected.PREVIOUS):
        judged = judge(wave, expected)
        assert judged.verdict in ("holds", "regressed", "settling")
        if judged.verdict == "holds":
            assert holds
            assert wave.observed.expected == expected
        else:
            assert judged.reason
    if holds:
        assert judge(wave, wave.observed.expected).verdict == "holds"


def test_what_a_0_1_agent_says_a_wave_replaced_is_kept_and_sent_back_in_a_rollback(
    gateway: HttpAgentGateway, target: AgentTarget
) -> None:
    applied = gateway.wave_status(target, "answer-wave-progressing")
    record = record_of(applied)
    assert record is not None
    assert record["previous"] == WAVES["answer-wave-progressing"]["previous"]
    assert record["imagesBefore"] == WAVES["answer-wave-progressing"]["imagesBefore"]
    request = WaveRequest.model_validate(documents(CURRENT, "request")["request-wave"])
    body = rollback_body(record, request)
    assert body is not None
    terms = body_of(body)["previous"]["default"]["amiSelectorTerms"]  # type: ignore[index]
    assert terms == [{"alias": "al2023@v20251202"}]


def test_the_error_documents_of_a_0_1_agent_are_typed_refusals(
    gateway: HttpAgentGateway, target: AgentTarget
) -> None:
    with pytest.raises(AgentRejected) as refused:
        gateway.wave_status(target, "refused")
    assert refused.value.status == 422
    assert ANSWERS["answer-error-invalid"]["error"]["message"] in refused.value.reason
    with pytest.raises(WaveUnknown):
        gateway.wave_status(target, "unknown")


def _sent(answer: BaseModel) -> dict[str, Any]:
    """An answer as its agent sent it: the fields its document carried, camelCase."""
    sent: dict[str, Any] = answer.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return sent


def _stranger(wave: dict[str, Any], **observed: Any) -> dict[str, Any]:
    """``wave`` as a newer agent might send it: fields this fleet does not know, at the top and
    in the observation, and ``observed`` values replaced."""
    return {
        **wave,
        "futureField": {"anything": [1, 2]},
        "observed": {**wave["observed"], "futureVerdict": "x", **observed},
    }


def test_unknown_fields_break_nothing(
    agent: JsonServer, gateway: HttpAgentGateway, target: AgentTarget
) -> None:
    converged = waves(CURRENT)["answer-wave-converged"]
    agent.routes["/v1/waves/stranger"] = (200, _stranger(converged))
    wave = gateway.wave_status(target, "stranger")
    assert "futureField" not in _sent(wave)  # read past, not kept
    assert judge(wave, Expected.TARGET).verdict == "holds"  # what it knows still holds


@pytest.mark.parametrize("name", sorted(waves(CURRENT)))
def test_an_unknown_enum_value_never_verifies(
    agent: JsonServer, gateway: HttpAgentGateway, target: AgentTarget, name: str
) -> None:
    wave = waves(CURRENT)[name]
    agent.routes[f"/v1/waves/odd-{name}"] = (200, _stranger(wave, expected="sideways"))
    read = gateway.wave_status(target, f"odd-{name}")
    assert read.observed.expected is Expected.UNKNOWN
    for expected in (Expected.TARGET, Expected.PREVIOUS):
        assert judge(read, expected).verdict != "holds"
