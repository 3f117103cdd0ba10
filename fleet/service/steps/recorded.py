"""What a step keeps of its wave: its ``result``, the agent's last wave document as JSON with
the fleet's notes beside it, written from the wire's document here and read back here.

The notes: ``settling`` (``since``, ``reason``: the cluster did not hold yet, looked at again
until the runner's grace ends), ``unreachable`` (``attempt``: the agent did not answer),
``observedAt`` (a verified step: when the cluster's live health was read). The read models
(:mod:`fleet.service.reads`) and the gates read the same JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from pydantic import BaseModel, TypeAdapter, ValidationError

from common.wire.observation import Observation
from common.wire.phases import Phase, ReadPhase
from common.wire.status import StatusDocument
from common.wire.waves import WaveDocument
from fleet.domain.json import JSONObject, JSONValue

Result = JSONObject
"""A step's ``result`` as stored."""

LIVE = ("pendingPods", "driftHalted")
"""What the gate reads from the cluster as it is after the soak, not from the wave's progress
(which the agent freezes when the wave converges)."""
SINCE_APPLIED = ("launchFailures", "registrationFailures")
"""What it reads from the wave's observation: the failures in the wave's NodePools since the
wave was applied (not the cluster's last 30 minutes, which may hold an earlier rollout's)."""

_PHASE: TypeAdapter[Phase] = TypeAdapter(ReadPhase)


def result_of(wave: WaveDocument, **notes: JSONValue) -> Result:
    """The wave document as a step keeps it, with ``notes`` (see the module docstring)."""
    return {**wave.model_dump(mode="json"), **notes}


def status_of(status: StatusDocument) -> Result:
    """The status as the fleet keeps it per cluster (``last_status``) and in a step's result
    when a rollback was decided on it."""
    return status.model_dump(mode="json")


def verified_result(wave: WaveDocument, status: StatusDocument) -> Result:
    """The wave document with the cluster's live health as its progress (``LIVE`` from the
    status, ``SINCE_APPLIED`` from the wave's observation), and when the status was read."""
    progress = wave.progress.model_dump(mode="json")
    progress.update(status.model_dump(mode="json", include=_fields(StatusDocument, LIVE)))
    seen = wave.observed.model_dump(mode="json", include=_fields(Observation, SINCE_APPLIED))
    progress.update(seen)
    return {**result_of(wave, observedAt=status.time), "progress": progress}


def _fields(document: type[BaseModel], aliases: tuple[str, ...]) -> set[str]:
    """The field names of ``document`` whose wire names are ``aliases``."""
    return {name for name, f in document.model_fields.items() if f.alias in aliases}


def recorded_phase(result: Mapping[str, object] | None) -> Phase | None:
    """The phase of the wave document a step kept (None before the agent answered;
    ``unknown`` for a phase this fleet does not know)."""
    if not result or "phase" not in result:
        return None
    try:
        return _PHASE.validate_python(result["phase"])
    except ValidationError:
        return Phase.UNKNOWN


def settling_since(result: Mapping[str, object] | None) -> datetime | None:
    """Since when the step's cluster has been settling (None when it was not, last time)."""
    note = (result or {}).get("settling")
    since = note.get("since") if isinstance(note, Mapping) else None
    return datetime.fromisoformat(since) if isinstance(since, str) else None


def unreachable_attempts(result: Mapping[str, object] | None) -> int:
    """How many times in a row the step's agent did not answer (0 after an answer)."""
    note = (result or {}).get("unreachable")
    attempt = note.get("attempt", 0) if isinstance(note, Mapping) else 0
    return attempt if isinstance(attempt, int) else 0
