"""A gateway that fails the calls a test tells it to: our own fake for faults (an agent that does
not answer, or refuses) at the exact step a test needs, in front of a real agent service."""

from __future__ import annotations

from dataclasses import dataclass, field

from common.wire.plan import PlanDocument, PlanRequest
from common.wire.status import EventsDocument, StatusDocument
from common.wire.waves import RollbackRequest, WaveDocument, WaveRequest
from fleet.agentport import AgentGateway, AgentTarget


@dataclass
class Flaky:
    """An :class:`AgentGateway` in front of another that fails the calls it is told to."""

    inner: AgentGateway
    failing: dict[str, Exception] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)

    once: set[str] = field(default_factory=set)
    """Calls in ``failing`` that fail only the next time."""

    def _go(self, name: str, target: AgentTarget) -> None:  # noqa: ARG002
        self.calls.append(name)
        if name in self.failing:
            error = self.failing[name]
            if name in self.once:
                del self.failing[name]
            raise error

    def status(self, target: AgentTarget) -> StatusDocument:
        self._go("status", target)
        return self.inner.status(target)

    def plan(self, target: AgentTarget, request: PlanRequest) -> PlanDocument:
        self._go("plan", target)
        return self.inner.plan(target, request)

    def events(self, target: AgentTarget, limit: int = 200) -> EventsDocument:
        self._go("events", target)
        return self.inner.events(target, limit)

    def apply_wave(self, target: AgentTarget, wave_id: str, request: WaveRequest) -> WaveDocument:
        self._go("apply_wave", target)
        return self.inner.apply_wave(target, wave_id, request)

    def wave_status(self, target: AgentTarget, wave_id: str) -> WaveDocument:
        self._go("wave_status", target)
        return self.inner.wave_status(target, wave_id)

    def rollback_wave(
        self, target: AgentTarget, wave_id: str, record: RollbackRequest | None = None
    ) -> WaveDocument:
        self._go("rollback_wave", target)
        return self.inner.rollback_wave(target, wave_id, record)
