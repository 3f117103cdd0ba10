"""The port the fleet reaches a cluster's agent through (:class:`AgentGateway`), what it is told
(:class:`AgentTarget`) and the typed errors every adapter raises: a refused connection, a
timeout or a 5xx are :class:`AgentUnreachable` (temporary) whichever adapter the step runner
has. Two optional parts a gateway may offer, each one call where the plain port needs two or
three: :class:`StatusWithWaveReader` (capability ``status-with-wave``) and
:class:`CheckedApplier` (``checked-apply``). The adapters are in :mod:`fleet.agenthttp` and
:mod:`fleet.gateway`, which also re-exports this module's names."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from pydantic import BaseModel

from common.wire.plan import PlanDocument, PlanRequest
from common.wire.status import EventsDocument, StatusDocument
from common.wire.waves import RollbackRequest, StatusWithWave, WaveDocument, WaveRequest
from fleet.agenttls import AgentTLS, TLSFailure
from fleet.credentials import AccountAccess


@dataclass(frozen=True)
class AgentTarget:
    """One cluster's agent as the fleet knows it."""

    cluster: str
    endpoint: str
    credentials_ref: str
    account: AccountAccess | None = None
    """The role to assume in the cluster's account (for ``secretsmanager:`` references)."""
    tls: AgentTLS | None = None
    """The entry's TLS references (None: the system's CAs, no client certificate)."""


class GatewayError(Exception):
    """Calling an agent failed; ``temporary`` says whether trying again later may succeed."""

    temporary = False

    def __init__(self, cluster: str, doing: str, reason: str) -> None:
        self.cluster = cluster
        self.doing = doing
        self.reason = reason
        super().__init__(f"{doing} on cluster {cluster}: {reason}")


class AgentUnreachable(GatewayError):
    """The agent did not answer, or answered 5xx / 429: try again with backoff."""

    temporary = True


class AgentRejected(GatewayError):
    """The agent refused the request (4xx: invalid, conflict, unauthorized); retrying the same
    request cannot help."""

    def __init__(
        self, cluster: str, doing: str, reason: str, status: int, code: str | None = None
    ) -> None:
        self.status = status
        self.code = code
        """The agent's error code (``{"error": {"code": ...}}``), when its answer had one."""
        super().__init__(cluster, doing, reason)


class AgentTLSRefused(AgentRejected):
    """The TLS between the fleet and the agent failed (``failure`` says why: a certificate not
    signed by the CA in ``caRef``, expired, for another host; no client certificate sent to an
    agent requiring one). Retrying cannot help until a certificate or the Fleet changes."""

    def __init__(self, cluster: str, doing: str, failure: TLSFailure, reason: str) -> None:
        self.failure = failure
        super().__init__(cluster, doing, reason, 0)


class WaveUnknown(AgentRejected):
    """The agent does not know the wave (404): it was never applied there."""


class FleetRefused(GatewayError):
    """The agent refused a checked apply (:meth:`CheckedApplier.apply_checked`): this fleet's
    release does not drive it, by the agent's reading of the promise; nothing was applied.
    Neither temporary nor an :class:`AgentRejected`: the caller says why on the step."""


class AgentGateway(Protocol):
    """The port the fleet reaches agents through. Every method raises :class:`GatewayError`
    subclasses only, and returns the wire's document read tolerantly (module docstring)."""

    def status(self, target: AgentTarget) -> StatusDocument:
        """The cluster's status (nodes per image, drifted, pending pods, halts, version)."""
        ...

    def plan(self, target: AgentTarget, request: PlanRequest) -> PlanDocument:
        """The drift preview of applying ``request``'s target; changes nothing."""
        ...

    def events(self, target: AgentTarget, limit: int = 200) -> EventsDocument:
        """The agent's last events (what it did and why), oldest first."""
        ...

    def apply_wave(self, target: AgentTarget, wave_id: str, request: WaveRequest) -> WaveDocument:
        """Apply a wave, idempotently: the same id and request again applies nothing twice."""
        ...

    def wave_status(self, target: AgentTarget, wave_id: str) -> WaveDocument:
        """The wave's phase and progress; :class:`WaveUnknown` when never applied there."""
        ...

    def rollback_wave(
        self, target: AgentTarget, wave_id: str, record: RollbackRequest | None = None
    ) -> WaveDocument:
        """Restore what the wave replaced, idempotently. ``record`` is the fleet's record of
        what the wave replaced (``previous``, ``kubernetesVersionBefore``, ``imagesBefore``,
        ``target``), used by an agent that has no record of the wave; :class:`WaveUnknown`
        when the agent does not know the wave and no record is given."""
        ...


@runtime_checkable
class StatusWithWaveReader(Protocol):
    """A gateway that reads a cluster's status and one wave's document together (both adapters
    of this module; a gateway without it is asked for the two one after the other)."""

    def status_with_wave(
        self, target: AgentTarget, wave_id: str
    ) -> tuple[StatusDocument, WaveDocument | None]:
        """The cluster's status and wave ``wave_id``'s document (None: the agent does not know
        the wave), in one call to an agent with the ``status-with-wave`` capability, else the
        status and then the wave. Raises as :meth:`AgentGateway.status` and
        :meth:`AgentGateway.wave_status` do, but never :class:`WaveUnknown`."""
        ...


@runtime_checkable
class CheckedApplier(Protocol):
    """A gateway that applies a wave only for an agent this fleet's release drives, answered
    with the status after it (both adapters of this module)."""

    def apply_checked(
        self, target: AgentTarget, wave_id: str, request: WaveRequest
    ) -> tuple[StatusDocument, WaveDocument] | None:
        """Apply a wave (as :meth:`AgentGateway.apply_wave`) if the agent, told this fleet's
        release, finds that release drives it; the status after it and the wave. None, sending
        nothing more, when the agent does not offer it (capability ``checked-apply``: its 404 for
        the route); :class:`FleetRefused`, nothing applied, when the agent refuses the fleet.
        Raises as :meth:`AgentGateway.apply_wave` does otherwise."""
        ...


def split_status(answer: StatusWithWave) -> tuple[StatusDocument, WaveDocument | None]:
    """The status alone (as ``GET /v1/status`` gives it: the fields its agent sent) and the wave
    document of a :class:`StatusWithWave` answer; the wave None also when the agent lacks the
    capability (it ignored the question)."""
    fields = {name: getattr(answer, name) for name in StatusDocument.model_fields}
    sent = answer.model_fields_set - {"wave"}
    status = StatusDocument.model_construct(_fields_set=sent, **fields)
    return status, answer.wave


def body_of(request: BaseModel) -> dict[str, object]:
    """A request as the JSON object sent: camelCase, only the fields that carry a value."""
    return request.model_dump(by_alias=True, exclude_none=True, mode="json")


__all__ = [
    "AgentGateway",
    "AgentRejected",
    "AgentTLSRefused",
    "AgentTarget",
    "AgentUnreachable",
    "CheckedApplier",
    "FleetRefused",
    "GatewayError",
    "StatusWithWaveReader",
    "WaveUnknown",
    "body_of",
    "split_status",
]
