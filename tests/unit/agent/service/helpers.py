"""A small fleet member with its service and a manually stepped simulation, for the tests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from agent.api.conditions import is_true
from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodeclaim import NodeClaim
from agent.service import AgentService
from agent.sim.member import member_world
from agent.sim.realtime import RealTimeSimulation
from agent.sim.world import World
from common.wire.waves import WaveDocument

NEWEST = "v20251216"
START = "v20251202"
STEP = 30.0


def alias(release: str) -> dict[str, Any]:
    """A wave request pinning every class to an AL2023 release."""
    return {"target": {"amiSelectorTerms": [{"alias": f"al2023@{release}"}]}}


@dataclass
class Rig:
    """A fleet member, its service, and a simulation stepped by hand."""

    world: World
    service: AgentService
    sim: RealTimeSimulation

    def run_until_not(self, wave_id: str, phase: str, limit: float = 3600.0) -> WaveDocument:
        """Step until the wave leaves ``phase`` (or ``limit`` virtual seconds); the wave."""
        waited = 0.0
        wave = self.service.wave(wave_id)
        while wave.phase == phase and waited < limit:
            self.sim.step(STEP)
            waited += STEP
            wave = self.service.wave(wave_id)
        return wave

    def images(self) -> set[str]:
        """The images of the initialized NodeClaims."""
        return {
            c.status.image_id or ""
            for c in self.world.cluster.list(NodeClaim)
            if is_true(c, "Initialized")
        }

    def terms(self, name: str = "default") -> list[dict[str, Any]]:
        """A class's amiSelectorTerms as stored."""
        stored = self.world.cluster.get(EC2NodeClass, name)
        return [t.to_manifest() for t in stored.spec.ami_selector_terms]


def rig(nodes: int = 20, speed: float | None = None, **member: Any) -> Rig:
    """A fresh fleet member of about ``nodes`` nodes (``speed``: its agent says it is a
    simulation started at that speed)."""
    world = member_world("test-member", nodes=nodes, **member)
    service = AgentService(world, name="test-member", speed=speed)
    sim = RealTimeSimulation(world, speed=1.0, lock=service.lock, on_step=service.refresh)
    return Rig(world, service, sim)


def wire(document: BaseModel) -> dict[str, Any]:
    """A document of the service as the agent's HTTP API writes it (camelCase, the fields the
    service set): what a test compares whole."""
    dumped: dict[str, Any] = document.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return dumped
