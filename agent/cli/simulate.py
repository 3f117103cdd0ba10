"""``driftwave agent simulate SCENARIO.yaml``: run a scenario and show what the agent did."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

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


def render(console: Console, result: dict[str, Any]) -> None:
    """The report as readable tables."""
    summary = result["summary"]
    console.rule(f"simulated {summary['simulatedSeconds']:.0f}s")
    claims = Table(title="NodeClaims", title_justify="left")
    for column in (
        "name",
        "nodepool",
        "instance type",
        "zone",
        "capacity",
        "image",
        "state",
        "pods",
    ):
        claims.add_column(column)
    for claim in result["nodeClaims"]:
        claims.add_row(
            claim["name"],
            claim["nodePool"] or "",
            claim["instanceType"] or "",
            claim["zone"] or "",
            claim["capacityType"] or "",
            claim["imageId"] or "",
            claim["state"],
            str(len(claim["pods"])),
        )
    console.print(claims)
    if result["pendingPods"]:
        pending = Table(title="Pending pods", title_justify="left")
        pending.add_column("pod")
        pending.add_column("reason")
        for item in result["pendingPods"]:
            pending.add_row(item["pod"], item["reason"])
        console.print(pending)
    timeline = Table(title="Timeline", title_justify="left")
    for column in ("t", "event", "object", "reason"):
        timeline.add_column(column, justify="right" if column == "t" else "left")
    for event in result["timeline"]:
        timeline.add_row(f"{event['t']:.1f}s", event["type"], event["object"], event["reason"])
    console.print(timeline)
    console.print(
        f"{summary['scheduledPods']}/{summary['pods']} pods scheduled on "
        f"{summary['nodeClaims']} nodeclaim(s); cost ${summary['costPerHour']:.4f}/hour"
    )
