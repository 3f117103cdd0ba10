"""Record the golden documents of the fleet↔agent wire from a real agent on simulated clusters.

Every request the fleet sends (the wave ``PUT`` body, the rollback body, the plan body) and
every answer the agent gives (its status, alone and with a wave in it, the wave document in each
phase the fleet acts on, the plan, the error documents) are captured as the real step runner
drives real agent services (:class:`tests.support.fleetsim.FleetHarness`): one release that
converges (then its wave is rolled back with the fleet's record), one whose image never becomes
Ready (the fleet rolls its wave back), one wave whose target resolves to no image; and through
the agent's HTTP application two refused requests and a checked apply (applied, and refused to
a fleet of another release). Volatile values (the rollout's and the wave's ids, times) are
normalised, so recording again gives the same files::

    python -m tests.contract.record --out tests/contract/v0.2

writes one JSON file per document (``request-*.json``, ``answer-*.json``).
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
from collections.abc import Callable, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

from fastapi.testclient import TestClient
from pydantic import BaseModel

from agent.server.app import create_app
from agent.service import AgentService
from agent.sim.member import member_world
from common.wire.plan import PlanDocument, PlanRequest
from common.wire.status import EventsDocument, StatusDocument
from common.wire.version import VERSION
from common.wire.waves import RollbackRequest, WaveDocument, WaveRequest
from fleet.agentport import AgentGateway, AgentTarget, StatusWithWaveReader, body_of
from fleet.domain.machine import RolloutState
from fleet.gateway import InProcessAgentGateway
from fleet.service.commands.rollouts import start_rollout
from fleet.service.steps.runner import StepRunner
from fleet.service.steps.truth import record_of, rollback_body
from tests.support.fleetsim import FleetHarness

NEW = "v20251216"
RINGS: list[dict[str, Any]] = [
    {"name": "canary", "soak": "10m", "gates": {"convergenceTimeout": "10m"}}
]
ROLLOUT_ID = "rollout-1"
WAVE_ID = "wave-1"
TIME = "2026-01-01T00:00:00Z"
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)")
M = TypeVar("M", bound=BaseModel)
_ENDED = {RolloutState.SUCCEEDED, RolloutState.ROLLED_BACK, RolloutState.ROLLBACK_FAILED}

JSON = dict[str, Any]
Call = tuple[str, JSON | None, JSON]
"""One gateway call: the method, the request body the fleet sent (None: none), the answer, each
in its wire form (what the HTTP transport carries)."""


class RecordingGateway:
    """An :class:`~fleet.agentport.AgentGateway` that keeps every call and its answer."""

    def __init__(self, inner: AgentGateway) -> None:
        self.inner = inner
        self.calls: list[Call] = []

    def _keep(self, method: str, body: BaseModel | None, answer: M) -> M:
        sent = None if body is None else json.loads(json.dumps(body_of(body)))
        self.calls.append((method, sent, _wire(answer)))
        return answer

    def status(self, target: AgentTarget) -> StatusDocument:
        return self._keep("status", None, self.inner.status(target))

    def plan(self, target: AgentTarget, request: PlanRequest) -> PlanDocument:
        return self._keep("plan", request, self.inner.plan(target, request))

    def events(self, target: AgentTarget, limit: int = 200) -> EventsDocument:
        return self.inner.events(target, limit)

    def apply_wave(self, target: AgentTarget, wave_id: str, request: WaveRequest) -> WaveDocument:
        return self._keep("apply_wave", request, self.inner.apply_wave(target, wave_id, request))

    def wave_status(self, target: AgentTarget, wave_id: str) -> WaveDocument:
        return self._keep("wave_status", None, self.inner.wave_status(target, wave_id))

    def status_with_wave(
        self, target: AgentTarget, wave_id: str
    ) -> tuple[StatusDocument, WaveDocument | None]:
        """The status and the wave, kept as the one answer the agent gave
        (``GET /v1/status?wave={id}``)."""
        assert isinstance(self.inner, StatusWithWaveReader)
        status, wave = self.inner.status_with_wave(target, wave_id)
        answer = {**_wire(status), "wave": None if wave is None else _wire(wave)}
        self.calls.append(("status_with_wave", None, answer))
        return status, wave

    def rollback_wave(
        self, target: AgentTarget, wave_id: str, record: RollbackRequest | None = None
    ) -> WaveDocument:
        answer = self.inner.rollback_wave(target, wave_id, record)
        return self._keep("rollback_wave", record, answer)


def _wire(answer: BaseModel) -> JSON:
    """An answer as the agent wrote it: the fields its document carried (a reader's defaults
    left out), camelCase."""
    dumped: JSON = answer.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return dumped


def _rollout(tmp: Path, *, faulty: bool) -> tuple[FleetHarness, RecordingGateway, str]:
    """One rollout of the canary ring (one cluster of 6 nodes) to its end, every call kept."""
    faulty_releases = (NEW,) if faulty else ()
    harness = FleetHarness(tmp, {"canary": ["can-1"]}, nodes=6, faulty=faulty_releases)
    recorder = RecordingGateway(InProcessAgentGateway(harness.agents))
    harness.runner = StepRunner(harness.ctx, recorder, poll_interval=10)
    rid = str(start_rollout(harness.ctx, harness.release(RINGS), "alice").id)

    def ended() -> bool:
        with harness.ctx.reading() as uow:
            return RolloutState(str(uow.rollouts.get(rid).state)) in _ENDED

    harness.run_until(ended, limit=timedelta(hours=3))
    return harness, recorder, rid


def _last(calls: list[Call], method: str, phase: str | None = None) -> Call:
    found = [c for c in calls if c[0] == method and (phase is None or c[2].get("phase") == phase)]
    if not found:
        raise AssertionError(f"no {method} call answered {phase or 'anything'}")
    return found[-1]


def _first(calls: list[Call], method: str) -> Call:
    return next(c for c in calls if c[0] == method)


def _http_errors() -> dict[str, Any]:
    """The agent's error documents, from its HTTP application: a refused wave (422), an
    unknown wave (404) and a checked apply refused to a fleet of 0.9.0 (409); and a checked
    apply for today's fleet (201: the status with the wave in it)."""
    service = AgentService(member_world("err-1", nodes=2), name="err-1")
    client = TestClient(create_app(service, token_hashes=None))
    invalid = client.put(f"/v1/waves/{WAVE_ID}", json={"target": {}})
    unknown = client.get("/v1/waves/wave-unknown")
    if invalid.status_code != 422 or unknown.status_code != 404:
        raise AssertionError(
            f"expected 422 and 404, got {invalid.status_code}, {unknown.status_code}"
        )
    body = {"target": {"amiSelectorTerms": [{"alias": f"al2023@{NEW}"}]}, "rollout": ROLLOUT_ID}
    path = f"/v1/waves/{WAVE_ID}/checked"
    refused = client.put(path, params={"fleet": "0.9.0"}, json=body)
    checked = client.put(path, params={"fleet": VERSION}, json=body)
    if refused.status_code != 409 or checked.status_code != 201:
        raise AssertionError(
            f"expected 409 and 201, got {refused.status_code}, {checked.status_code}"
        )
    return {
        "answer-error-invalid": invalid.json(),
        "answer-error-not-found": unknown.json(),
        "answer-error-fleet-refused": refused.json(),
        "answer-checked-apply": checked.json(),
    }


def record() -> dict[str, Any]:
    """Every golden document by name (without ``.json``), normalised (see the module
    docstring)."""
    documents: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        good_dir, bad_dir = Path(tmp, "good"), Path(tmp, "faulty")
        good_dir.mkdir()
        bad_dir.mkdir()
        harness, good, good_id = _rollout(good_dir, faulty=False)
        applied = _first(good.calls, "apply_wave")
        documents["request-wave"] = applied[1]
        documents["answer-wave-progressing"] = applied[2]
        documents["answer-wave-converged"] = _last(good.calls, "wave_status", "converged")[2]
        documents["answer-status"] = _last(good.calls, "status")[2]
        documents["answer-status-with-wave"] = _last(good.calls, "status_with_wave")[2]
        target = AgentTarget("can-1", "in-process", "")
        documents["request-plan"] = {}  # the fleet's preview of a cluster (fleet.api.fleets)
        documents["answer-plan"] = _wire(good.plan(target, PlanRequest()))
        # the fleet rolls back a converged wave: rolling-back until its nodes are replaced
        converged = WaveDocument.model_validate(applied[2])
        body = rollback_body(record_of(converged), WaveRequest.model_validate(applied[1] or {}))
        wave_id = converged.id
        documents["answer-wave-rolling-back"] = _wire(good.rollback_wave(target, wave_id, body))
        for _ in range(360):
            harness.lives["can-1"].step(10)
            if good.wave_status(target, wave_id).phase == "rolled-back":
                break
        documents["answer-wave-rolled-back"] = _last(good.calls, "wave_status", "rolled-back")[2]
        failing = WaveRequest.model_validate(
            {"target": {"amiSelectorTerms": [{"id": "ami-0000000000000dead"}]}}
        )
        documents["answer-wave-failed"] = _wire(good.apply_wave(target, "wave-2", failing))
        _, bad, bad_id = _rollout(bad_dir, faulty=True)
        documents["request-rollback"] = _first(bad.calls, "rollback_wave")[1]
        documents["answer-wave-progressing-unready"] = _last(bad.calls, "wave_status")[2]
        ids = {
            _first(good.calls, "apply_wave")[1]["rollout"]: ROLLOUT_ID,  # type: ignore[index]
            _first(bad.calls, "apply_wave")[1]["rollout"]: ROLLOUT_ID,  # type: ignore[index]
            good_id: ROLLOUT_ID,
            bad_id: ROLLOUT_ID,
        }
        steps = {_wave_id(good), _wave_id(bad)}
    documents.update(_http_errors())
    return {name: normalise(doc, ids, steps) for name, doc in documents.items()}


def _wave_id(recorder: RecordingGateway) -> str:
    answer = _first(recorder.calls, "apply_wave")[2]
    return str(answer["id"])


def normalise(document: Any, ids: Mapping[str, str], steps: set[str]) -> Any:
    """``document`` with the rollout's ids, the wave's ids and every time replaced by fixed
    values (keys sorted when written)."""
    text = json.dumps(document, sort_keys=True)
    for step in steps:  # first: a step's id starts with its rollout's
        text = text.replace(step, WAVE_ID)
    for old, new in ids.items():
        text = text.replace(old, new)
    return json.loads(_TIME.sub(TIME, text))


def write(documents: Mapping[str, Any], out: Path) -> list[Path]:
    """Write each document to ``out/<name>.json`` (sorted keys, two-space indent)."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, document in sorted(documents.items()):
        path = out / f"{name}.json"
        path.write_text(dumps(document))
        written.append(path)
    return written


def dumps(document: Any) -> str:
    """A golden document's text as written."""
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None, echo: Callable[[str], None] = print) -> int:
    """``python -m tests.contract.record --out DIR``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, required=True, help="the version's folder")
    args = parser.parse_args(argv)
    for path in write(record(), args.out):
        echo(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
