"""``driftwave agent plan SCENARIO.yaml``: the drift preview of a simulated cluster.

The scenario is played up to its last event with the agent in dry-run mode (drift is detected,
nothing is disrupted), then :func:`agent.disruption.preview.drift_preview` reports what drift
would do from there.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

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


def render(console: Console, result: dict[str, Any]) -> None:
    """The preview as readable tables."""
    console.rule(f"drift preview at {result['at']} (nothing was changed)")
    drifted = Table(title="Drifted nodes", title_justify="left")
    for column in ("node", "nodepool", "reason", "image → target", "pods", "action"):
        drifted.add_column(column)
    for row in result["drifted"]:
        if row["action"] == "replace":
            action = "replace"
            if row.get("drainNote"):
                action += f" ({row['drainNote']})"
        elif row["action"] == "delete":
            action = f"delete: {row['deleteNote']}"
        else:
            action = f"hold: {row['blocker']}"
        drifted.add_row(
            row["node"],
            row["nodePool"],
            row["reason"],
            f"{row['image']} → {row['targetImage'] or '?'}",
            str(row["pods"]),
            action,
        )
    console.print(drifted)
    if result["waves"]:
        waves = Table(title="Disruption waves (within the Drifted budgets)", title_justify="left")
        for column in ("nodepool", "wave", "starts", "nodes"):
            waves.add_column(column)
        for wave in result["waves"]:
            start = (
                "never (budgets allow none)"
                if wave["startSeconds"] is None
                else f"+{wave['startSeconds']:.0f}s"
            )
            waves.add_row(
                wave["nodePool"], str(wave["wave"] or "-"), start, ", ".join(wave["nodes"])
            )
        console.print(waves)
    if result["haltedNodePools"]:
        console.print(f"drift halted on: {', '.join(result['haltedNodePools'])}")
    counts = (
        f"{result['replace']} to replace, {result['delete']} to delete without replacement, "
        f"{result['held']} held"
    )
    if not result["drifted"]:
        console.print("no node has drifted")
    elif result["etaSeconds"] is None:
        console.print(f"{counts}; no ETA: a budget allows no drift disruption")
    else:
        console.print(
            f"{counts}; done in about "
            f"{result['etaSeconds']:.0f}s (by {result['eta']}, assuming "
            f"{result['replaceSecondsAssumed']:.0f}s per replacement)"
        )
