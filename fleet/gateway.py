"""How the fleet reaches a cluster's agent: the adapters of the
:class:`~fleet.agentport.AgentGateway` port (:mod:`fleet.agentport`: the port, its documents'
helpers and its typed errors), imported from here: :class:`HttpAgentGateway`
(:mod:`fleet.agenthttp`) calls the agent's HTTP API;
:class:`InProcessAgentGateway` (here: the only fleet module that imports the agent, and only
when an in-process call is made) calls agent services living in the same process (tests,
single-process tools). Both raise the same typed errors and return the wire's documents, and
both offer the port's optional one-call parts (:class:`StatusWithWaveReader`,
:class:`CheckedApplier`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TypeVar

from common.wire.base import Answer
from common.wire.plan import PlanDocument, PlanRequest
from common.wire.status import EventsDocument, StatusDocument
from common.wire.version import VERSION
from common.wire.waves import RollbackRequest, WaveDocument, WaveRequest
from fleet.agenthttp import HttpAgentGateway
from fleet.agentport import (
    AgentRejected,
    AgentTarget,
    AgentUnreachable,
    FleetRefused,
    WaveUnknown,
    body_of,
    split_status,
)

if TYPE_CHECKING:  # the agent's service loads only with the in-process gateway
    from agent.service import AgentService

D = TypeVar("D", bound=Answer)


class InProcessAgentGateway:
    """:class:`AgentGateway` over agent services in this process, by cluster name: the
    service's answers are the wire's documents already, returned as they are."""

    def __init__(self, agents: Mapping[str, AgentService]) -> None:
        self._agents = agents

    def _agent(self, target: AgentTarget, doing: str) -> AgentService:
        agent = self._agents.get(target.cluster)
        if agent is None:
            raise AgentUnreachable(target.cluster, doing, "no agent for this cluster here")
        return agent

    def _guard(
        self,
        target: AgentTarget,
        doing: str,
        call: Callable[[AgentService], D],
    ) -> D:
        from agent.service import InvalidRequest, WaveConflict
        from agent.service import WaveNotFound as AgentWaveNotFound

        try:
            result = call(self._agent(target, doing))
        except AgentWaveNotFound as exc:
            raise WaveUnknown(target.cluster, doing, str(exc), 404) from exc
        except WaveConflict as exc:
            raise AgentRejected(target.cluster, doing, str(exc), 409) from exc
        except InvalidRequest as exc:
            raise AgentRejected(target.cluster, doing, str(exc), 422) from exc
        return result

    def status(self, target: AgentTarget) -> StatusDocument:
        """See :meth:`AgentGateway.status`."""
        doing = "reading the agent's status"
        return self._guard(target, doing, lambda a: a.status())

    def plan(self, target: AgentTarget, request: PlanRequest) -> PlanDocument:
        """See :meth:`AgentGateway.plan`."""
        body = body_of(request)
        return self._guard(target, "previewing the wave", lambda a: a.plan(body))

    def events(self, target: AgentTarget, limit: int = 200) -> EventsDocument:
        """See :meth:`AgentGateway.events`."""
        doing = "reading the agent's events"
        return self._guard(target, doing, lambda a: a.events(limit))

    def apply_wave(self, target: AgentTarget, wave_id: str, request: WaveRequest) -> WaveDocument:
        """See :meth:`AgentGateway.apply_wave`."""
        body = body_of(request)
        return self._guard(
            target,
            f"applying wave {wave_id}",
            lambda a: a.apply_wave(wave_id, body)[1],
        )

    def wave_status(self, target: AgentTarget, wave_id: str) -> WaveDocument:
        """See :meth:`AgentGateway.wave_status`."""
        doing = f"reading wave {wave_id}"
        return self._guard(target, doing, lambda a: a.wave(wave_id))

    def apply_checked(
        self, target: AgentTarget, wave_id: str, request: WaveRequest
    ) -> tuple[StatusDocument, WaveDocument] | None:
        """See :meth:`CheckedApplier.apply_checked`."""
        from agent.service import FleetRefused as AgentFleetRefused
        from agent.service import apply_checked

        doing = f"applying wave {wave_id}"
        body = body_of(request)
        try:
            answer = self._guard(
                target, doing, lambda a: apply_checked(a, wave_id, body, VERSION)[1]
            )
        except AgentFleetRefused as exc:
            raise FleetRefused(target.cluster, doing, str(exc)) from exc
        status, wave = split_status(answer)
        assert wave is not None  # the agent built it
        return status, wave

    def status_with_wave(
        self, target: AgentTarget, wave_id: str
    ) -> tuple[StatusDocument, WaveDocument | None]:
        """See :meth:`StatusWithWaveReader.status_with_wave`."""
        from agent.service import status_with_wave

        doing = f"reading the agent's status and wave {wave_id}"
        return split_status(self._guard(target, doing, lambda a: status_with_wave(a, wave_id)))

    def rollback_wave(
        self, target: AgentTarget, wave_id: str, record: RollbackRequest | None = None
    ) -> WaveDocument:
        """See :meth:`AgentGateway.rollback_wave`."""
        body = body_of(record) if record is not None else None
        return self._guard(
            target,
            f"rolling back wave {wave_id}",
            lambda a: a.rollback_wave(wave_id, body),
        )


__all__ = ["HttpAgentGateway", "InProcessAgentGateway"]
