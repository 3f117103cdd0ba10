"""The step runner's judgement of an agent's observation: a match on the verdict's ``state``
(and ``expected``), never on its words; what the fleet does not understand never verifies."""

from __future__ import annotations

from typing import Any

import pytest

from common.wire.observation import Expected, VerdictCode, VerdictState
from common.wire.phases import Phase
from common.wire.status import StatusDocument
from common.wire.waves import WaveDocument, WaveRequest
from fleet.service.steps.recorded import recorded_phase, result_of
from fleet.service.steps.truth import judge, never_applied, record_of, rollback_body
from tests.support.wiredocs import observed_json, status_json, wave_json


def _wave(**observed: Any) -> WaveDocument:
    return WaveDocument.model_validate(wave_json(observed=observed_json(**observed)))


@pytest.mark.parametrize(
    ("state", "code", "verdict"),
    [
        ("holds", "holds", "holds"),
        ("regressed", "selection-missing", "regressed"),
        ("regressed", "control-plane-version", "regressed"),
        ("regressed", "no-image", "regressed"),
        ("settling", "nodes-not-on-target", "settling"),
        ("settling", "nodes-drifted", "settling"),
        ("unknown", "unknown", "settling"),
    ],
)
def test_the_verdict_is_read_from_the_state(state: str, code: str, verdict: str) -> None:
    holds = state == "holds"
    wave = _wave(state=state, code=code, holds=holds, reason="" if holds else "words")
    assert judge(wave, Expected.TARGET).verdict == verdict


def test_the_words_of_reason_decide_nothing() -> None:
    old_words = "EC2NodeClass default no longer carries the amiSelectorTerms the wave set"
    wave = _wave(holds=False, state="settling", code="nodes-drifted", reason=old_words)
    assert judge(wave, Expected.TARGET).verdict == "settling"
    wave = _wave(holds=False, state="regressed", code="no-image", reason="reworded entirely")
    assert judge(wave, Expected.TARGET).verdict == "regressed"
    assert judge(wave, Expected.TARGET).reason == "reworded entirely"


def test_a_newer_agents_state_and_code_are_unknown_and_never_verify() -> None:
    wave = _wave(holds=True, state="confirmed", code="quorum-reached")
    assert (wave.observed.state, wave.observed.code) == (VerdictState.UNKNOWN, VerdictCode.UNKNOWN)
    judged = judge(wave, Expected.TARGET)
    assert judged.verdict == "settling"
    assert "a verdict the fleet does not know" in judged.reason


def test_an_older_agent_without_a_verdict_holds_only_when_it_holds() -> None:
    held = _wave(holds=True, state=None, code=None)
    assert (held.observed.state, held.observed.code) == (VerdictState.HOLDS, VerdictCode.HOLDS)
    assert judge(held, Expected.TARGET).verdict == "holds"
    old = "EC2NodeClass default no longer carries the amiSelectorTerms the wave set"
    not_held = _wave(holds=False, state=None, code=None, reason=old)
    assert not_held.observed.state is VerdictState.UNKNOWN
    assert judge(not_held, Expected.TARGET).verdict == "settling"


def test_a_holding_state_on_an_observation_that_does_not_hold_is_not_verified() -> None:
    assert judge(_wave(holds=False, state="holds"), Expected.TARGET).verdict == "settling"


def test_an_observation_against_the_other_selection_is_a_regression() -> None:
    judged = judge(_wave(expected="previous"), Expected.TARGET)
    assert judged.verdict == "regressed"
    assert "against its previous selection, not the target one (phase converged)" in judged.reason
    assert judge(_wave(expected="elsewhere"), Expected.TARGET).verdict == "settling"


def test_unknown_fields_are_ignored_and_an_unknown_phase_is_unknown() -> None:
    wave = WaveDocument.model_validate(wave_json(phase="paused", shinyNewField={"a": 1}))
    assert wave.phase is Phase.UNKNOWN
    assert recorded_phase(result_of(wave)) is Phase.UNKNOWN
    assert recorded_phase({"phase": "paused"}) is Phase.UNKNOWN
    assert recorded_phase({"phase": "converged"}) is Phase.CONVERGED
    assert recorded_phase(None) is None


def test_what_a_wave_replaced_is_kept_and_sent_back_as_a_rollback_request() -> None:
    wave = WaveDocument.model_validate(wave_json())
    record = record_of(wave)
    assert record == {
        "previous": {"default": {"amiSelectorTerms": [{"id": "ami-old"}], "amiFamily": None}},
        "kubernetesVersionBefore": "1.31",
        "imagesBefore": ["ami-old"],
    }
    request = WaveRequest.model_validate(
        {"target": {"amiSelectorTerms": [{"id": "ami-new"}]}, "rollout": "r-1"}
    )
    body = rollback_body(record, request)
    assert body is not None
    assert body.model_dump(by_alias=True, exclude_none=True, mode="json") == {
        "previous": {"default": {"amiSelectorTerms": [{"id": "ami-old"}]}},
        "kubernetesVersionBefore": "1.31",
        "imagesBefore": ["ami-old"],
        "target": {"amiSelectorTerms": [{"id": "ami-new"}]},
        "rollout": "r-1",
    }
    assert rollback_body(None, request) is None
    assert record_of(WaveDocument.model_validate(wave_json(previous={}))) is None


def test_a_wave_is_proved_never_applied_only_when_no_class_carries_its_target() -> None:
    status = StatusDocument.model_validate(status_json())
    carried = WaveRequest.model_validate({"target": {"amiSelectorTerms": [{"id": "ami-new"}]}})
    assert never_applied(status, carried) is None
    other = WaveRequest.model_validate({"target": {"amiSelectorTerms": [{"id": "ami-x"}]}})
    assert never_applied(status, other) == (
        "never applied there: no EC2NodeClass carries the target (default: id ami-new)"
    )
    newer = WaveRequest.model_validate({"target": {"kubernetesVersion": "1.32"}})
    assert never_applied(status, newer) == (
        "never applied there: the control plane runs 1.31, below the target 1.32"
    )
