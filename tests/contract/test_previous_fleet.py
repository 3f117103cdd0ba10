"""Today's wire against the previous release: every request today's fleet sends (its golden
documents, ``v0.2/``) is accepted by a 0.1 agent's request parser, so a fleet never sends an
agent it drives a field that agent refuses; and every answer today's agent gives is read by the
0.1 fleet's readers without error and with the same verdict on whether it holds, so a 0.1 fleet
keeps driving an agent upgraded before it."""

from __future__ import annotations

from typing import Any

import pytest

from common.wire.observation import Expected
from common.wire.waves import WaveDocument
from fleet.service.steps.truth import judge
from tests.contract.golden import CURRENT, documents, previous_readers, waves

OLD = previous_readers()
REQUESTS = documents(CURRENT, "request")
WAVES = waves(CURRENT)
MODELS = {
    "request-wave": OLD.WaveRequest,
    "request-rollback": OLD.RollbackRequest,
    "request-plan": OLD.PlanRequest,
}


def test_every_request_of_today_has_a_0_1_model() -> None:
    assert sorted(REQUESTS) == sorted(MODELS)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_0_1_agent_accepts_every_request_of_today(name: str) -> None:
    parsed = OLD.parse_request(MODELS[name], REQUESTS[name])
    assert parsed.model_dump(by_alias=True, exclude_none=True, mode="json") == REQUESTS[name]


def test_the_0_1_parser_refuses_what_it_does_not_know() -> None:
    """The replay above can fail: a field a 0.1 agent does not know is refused, naming it."""
    newer = {**REQUESTS["request-wave"], "verdictCodes": True}
    with pytest.raises(OLD.Refused) as refused:
        OLD.parse_request(OLD.WaveRequest, newer)
    assert [path for path, _ in refused.value.fields] == ["verdictCodes"]


def test_the_wave_ids_of_today_are_0_1_wave_ids() -> None:
    assert OLD.valid_wave_id(WAVES["answer-wave-progressing"]["id"])


def test_a_0_1_fleet_reads_todays_status() -> None:
    status = documents(CURRENT, "answer")["answer-status"]
    reading = OLD.read_status(status)
    assert reading.nodes == status["nodes"] > 0
    assert reading.by_image == status["nodesByImage"]
    assert reading.problems == []
    assert reading.kubernetes_version == status["kubernetesVersion"]
    assert [name for name, _ in reading.node_classes] == [c["name"] for c in status["nodeClasses"]]


def test_a_0_1_fleet_reads_todays_status_with_a_wave_as_the_status() -> None:
    both = documents(CURRENT, "answer")["answer-status-with-wave"]
    reading = OLD.read_status(both)
    assert reading.by_image == both["nodesByImage"]
    assert reading.problems == []
    assert both["wave"]["id"] == WAVES["answer-wave-converged"]["id"]


@pytest.mark.parametrize("name", sorted(WAVES))
def test_a_0_1_fleet_reads_every_wave_document_of_today_with_the_same_verdict_on_holds(
    name: str,
) -> None:
    wave: dict[str, Any] = WAVES[name]
    reading = OLD.read_wave(wave)
    assert reading.phase in OLD.PHASES
    assert reading.phase == wave["phase"]
    assert reading.record == {
        "previous": wave["previous"],
        "kubernetesVersionBefore": wave["kubernetesVersionBefore"],
        "imagesBefore": wave["imagesBefore"],
    }
    read = WaveDocument.model_validate(wave)
    for expected in (Expected.TARGET, Expected.PREVIOUS):
        old, _ = OLD.judge(wave, str(expected))
        today = judge(read, expected).verdict
        # the same verdict, regression or settling too: today's codes say what 0.1's words did
        assert old == today, (expected, old, today)


def test_todays_documents_cover_every_phase_the_fleet_acts_on() -> None:
    phases = {wave["phase"] for wave in WAVES.values()}
    assert {"progressing", "converged", "failed", "rolling-back", "rolled-back"} <= phases
    holds = {wave["observed"]["holds"] for wave in WAVES.values()}
    assert holds == {True, False}
