"""The ports the fleet's services reach the outside through (besides the database and the
agents' gateway): sending step and contact-probe messages to workers, and reading a gate's
metrics."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from fleet.domain.gates import MetricReading
from fleet.domain.json import JSONObject


class StepAction(StrEnum):
    """What a step message asks a worker to do."""

    APPLY = "apply"
    """Apply the wave on the cluster's agent, then follow it until it converges or fails."""
    VERIFY = "verify"
    """Observe the cluster once more after the wave's soak (for the gate)."""
    ROLLBACK = "rollback"
    """Roll the wave back on the agent, then follow it until it is rolled back."""


@dataclass(frozen=True)
class StepMessage:
    """One unit of work for a worker: a step, an action, and the trace context to continue."""

    step_id: str
    action: StepAction
    traceparent: str | None = None

    def to_dict(self) -> JSONObject:
        """The message as JSON-ready data (the Celery payload)."""
        return {"stepId": self.step_id, "action": str(self.action), "traceparent": self.traceparent}

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> StepMessage:
        """Read a message sent by :meth:`to_dict`; raises ValueError when malformed."""
        try:
            parent = data.get("traceparent")
            return cls(
                str(data["stepId"]),
                StepAction(str(data["action"])),
                None if parent is None else str(parent),
            )
        except (KeyError, ValueError, TypeError) as exc:
            raise ValueError(f"not a step message: {data!r}") from exc


@dataclass(frozen=True)
class ProbeMessage:
    """A batch of clusters (by id) whose agents a worker should contact once and record the
    answer (:mod:`fleet.service.contact.probes`)."""

    clusters: tuple[int, ...]

    def to_dict(self) -> JSONObject:
        """The message as JSON-ready data (the Celery payload)."""
        return {"clusters": list(self.clusters)}

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> ProbeMessage:
        """Read a message sent by :meth:`to_dict`; raises ValueError when malformed."""
        try:
            clusters = data["clusters"]
            if not isinstance(clusters, list) or not all(
                isinstance(c, int) and not isinstance(c, bool) for c in clusters
            ):
                raise TypeError("clusters must be a list of integers")
            return cls(tuple(clusters))
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not a probe message: {data!r}") from exc


class StepDispatcher(Protocol):
    """Sends step messages (and contact probes) to the workers."""

    def dispatch(self, message: StepMessage) -> None:
        """Queue ``message`` for a worker. Delivery is at least once: a message may arrive
        twice, and the step runner makes that harmless. Raises :class:`DispatchFailed` when the
        broker cannot take it (the scheduler retries on its next tick)."""
        ...

    def dispatch_many(self, messages: Sequence[StepMessage]) -> int:
        """Queue ``messages`` (a wave's worth at once: the adapter may carry several in one
        broker message); how many the broker took. Never raises for a broker that refused some:
        those are sent again once their steps stay silent."""
        ...

    def dispatch_probes(self, messages: Sequence[ProbeMessage]) -> int:
        """Queue contact probes (each message one batch of clusters); how many messages the
        broker took. Never raises: a probe lost is sent again at the next probe interval."""
        ...


class DispatchFailed(RuntimeError):
    """The broker did not take a message (temporary: the scheduler sends it again)."""


@dataclass(frozen=True)
class MetricQuery:
    """One metric gate's query: ``prometheus`` (``url`` + ``query``) or ``http`` (``url`` +
    dotted ``field`` of the JSON answer)."""

    name: str
    kind: str
    url: str
    query: str = ""
    field: str = ""


class MetricSource(Protocol):
    """Reads the value a gate's metric check compares with its threshold."""

    def read(self, check: MetricQuery) -> MetricReading:
        """Run the check's query (Prometheus or HTTP JSON) once; never raises: a failed query is
        a reading with ``error`` set (the gate then fails that check)."""
        ...
