"""Whose time the agent's documents carry: ``clock`` says whether the cluster is a simulation
(and the speed it was started at), and a wave's ``elapsedSeconds`` is its time on that clock,
up to its convergence."""

from __future__ import annotations

from datetime import datetime

import pytest

from agent.service import AgentService
from agent.sim.member import member_world
from common.wire.status import StatusDocument
from common.wire.waves import WaveDocument

from .helpers import NEWEST, STEP, alias, rig, wire


def at(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def test_a_simulated_cluster_says_so_and_times_its_wave_on_its_clock() -> None:
    r = rig(nodes=10, speed=600.0)
    status = r.service.status()
    StatusDocument.model_validate(wire(status), extra="forbid")
    assert wire(status.clock) == {"simulated": True, "speed": 600.0}
    _, wave = r.service.apply_wave("wave-1", alias(NEWEST))
    assert wire(wave.clock) == {"simulated": True, "speed": 600.0}
    assert wave.elapsed_seconds == 0.0
    r.sim.step(STEP)
    under_way = r.service.wave("wave-1")
    assert under_way.phase == "progressing"
    assert under_way.elapsed_seconds == pytest.approx(STEP)
    done = r.run_until_not("wave-1", "progressing")
    WaveDocument.model_validate(wire(done), extra="forbid")
    assert done.phase == "converged"
    assert done.converged_at is not None
    took = (at(done.converged_at) - at(done.applied_at)).total_seconds()
    assert done.elapsed_seconds == pytest.approx(took)
    r.sim.step(STEP * 10)
    assert r.service.wave("wave-1").elapsed_seconds == pytest.approx(took), "up to converging"


def test_an_agent_without_a_speed_says_its_clock_is_the_wall_clock() -> None:
    r = rig(nodes=10)
    assert wire(r.service.status().clock) == {"simulated": False, "speed": 1.0}
    _, wave = r.service.apply_wave("wave-1", alias(NEWEST))
    assert wire(wave.clock) == {"simulated": False, "speed": 1.0}


@pytest.mark.parametrize("speed", [0.0, -600.0])
def test_a_speed_that_is_not_above_zero_is_refused(speed: float) -> None:
    world = member_world("test-member", nodes=10)
    with pytest.raises(ValueError, match="speed must be above 0"):
        AgentService(world, name="test-member", speed=speed)
