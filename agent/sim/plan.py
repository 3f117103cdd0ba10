"""The drift preview of a simulated cluster (``driftwave agent plan``).

The scenario is played up to its last event with the agent in dry-run mode (drift is detected,
nothing is disrupted), then :func:`agent.disruption.preview.drift_preview` reports what drift
would do from there.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent.scheduling.strategy import Strategy
    from agent.sim.scenario_run import Progress


def plan(
    path: Path,
    seed: int = 1,
    strategy: Strategy = "driftwave",
    progress: Progress | None = None,
) -> dict[str, Any]:
    """The preview for the scenario at ``path``; raises ScenarioError like ``simulate``."""
    # Imported here: the simulator (and the scheduler's solver) loads only for a preview.
    from agent.disruption.preview import drift_preview
    from agent.sim.scenario_run import build_world, last_event_seconds, load_scenario, run

    scenario, objects = load_scenario(path)
    world = build_world(scenario, objects, seed=seed, strategy=strategy, act=False)
    at = last_event_seconds(scenario)
    run(world, scenario, at, progress)
    result = drift_preview(world.disruption, replace_seconds=world.replace_seconds())
    result["scenario"] = scenario.metadata.name
    result["simulatedSeconds"] = at
    return result


def as_json(result: dict[str, Any]) -> str:
    """The preview as JSON."""
    return json.dumps(result, indent=2)
