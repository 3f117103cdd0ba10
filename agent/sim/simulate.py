"""Run a Scenario on a virtual clock and report what the agent did (``driftwave agent
simulate``; the command line prints the report as tables, or as data)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent.scheduling.strategy import Strategy
    from agent.sim.scenario_run import Progress


def simulate(
    path: Path,
    until: str | None = None,
    seed: int = 1,
    strategy: Strategy = "driftwave",
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Run the scenario at ``path``; raises ScenarioError (or ManifestSyntaxError/OSError)."""
    # Imported here: the simulator (and the scheduler's solver) loads only for a simulation.
    from agent.api.scenario import seconds
    from agent.sim.report import report
    from agent.sim.scenario_run import build_world, load_scenario, run

    scenario, objects = load_scenario(path)
    world = build_world(scenario, objects, seed=seed, strategy=strategy)
    run(world, scenario, seconds(until) if until else None, progress)
    return report(world)


def as_json(result: dict[str, Any]) -> str:
    """The report as JSON."""
    return json.dumps(result, indent=2)
