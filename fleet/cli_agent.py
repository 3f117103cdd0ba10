"""``driftwave agent``: the per-cluster agent's commands (simulate, plan)."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from agent.api.manifests import ManifestSyntaxError
from agent.cli.plan import as_json as plan_json
from agent.cli.plan import plan as drift_plan
from agent.cli.plan import render as render_plan
from agent.cli.simulate import as_json as sim_json
from agent.cli.simulate import render, simulate
from agent.sim.heap import tune_for_large_simulations
from agent.sim.scenario_run import ScenarioError
from fleet.clicore import Group, JsonOpt, show_help_when_bare


class SimStrategy(StrEnum):
    """The scheduling strategies ``agent simulate`` offers."""

    driftwave = "driftwave"
    karpenter = "karpenter"


agent_app = typer.Typer(
    name="agent",
    help="The per-cluster agent: simulate it against a simulated cluster and cloud, or preview "
    "what drift would do.",
    cls=Group,
)
agent_app.callback(invoke_without_command=True)(show_help_when_bare)


@agent_app.command("simulate")
def agent_simulate(
    scenario: Annotated[
        Path, typer.Argument(help="A driftwave.io/v1alpha1 Scenario file.", exists=True)
    ],
    as_json: JsonOpt = False,
    until: Annotated[
        str | None,
        typer.Option(help="Stop after this much simulated time (e.g. 30m); default: spec.until."),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed for names, ids and prices.")] = 1,
    strategy: Annotated[
        SimStrategy,
        typer.Option(
            help="How the provisioner picks nodes: driftwave (cost-planned, the default) or "
            "karpenter (Karpenter's own order, to compare).",
            case_sensitive=False,
        ),
    ] = SimStrategy.driftwave,
) -> None:
    """Run a Scenario on a virtual clock: the agent's provisioner, NodeClaim lifecycle, drift
    detection, disruption and termination against a simulated cluster and cloud (the real EC2
    catalog and prices).

    Prints the NodeClaims launched (instance type, zone, capacity type, image, pods), the pods
    left pending and why, the cost per hour and the timeline (drift, disruptions with method
    and reason, evictions, PDB refusals, terminations); --json adds the summary (most nodes
    disrupted at once per NodePool, PDB violations, pods lost, nodes per image over time).
    Exit code 1 when the scenario or a manifest it loads is invalid.

    Example: driftwave agent simulate examples/scenarios/seed-000-inflate.yaml
    """
    if until is not None and not re.fullmatch(r"([0-9]+(ms|s|m|h))+", until):
        raise typer.BadParameter(
            f"{until!r} is not a duration such as 30s or 10m", param_hint="--until"
        )
    result = _scenario_result(lambda: simulate(scenario, until, seed, strategy.value))
    if as_json:
        print(sim_json(result))
    else:
        render(Console(highlight=False), result)


def _scenario_result(run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run a scenario command; an invalid scenario or manifest prints its findings, exit 1."""
    tune_for_large_simulations()
    try:
        return run()
    except ScenarioError as exc:
        for finding in exc.findings:
            print(str(finding), file=sys.stderr)
        raise typer.Exit(1) from exc
    except ManifestSyntaxError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise typer.Exit(1) from exc


@agent_app.command("plan")
def agent_plan(
    scenario: Annotated[
        Path, typer.Argument(help="A driftwave.io/v1alpha1 Scenario file.", exists=True)
    ],
    as_json: JsonOpt = False,
    seed: Annotated[int, typer.Option(help="Seed for names, ids and prices.")] = 1,
) -> None:
    """Preview drift without acting: which nodes have drifted and why, which would be replaced
    or held (and by what: a do-not-disrupt pod, a PodDisruptionBudget, a halted NodePool), the
    waves the NodePools' Drifted budgets allow, and an ETA.

    The scenario is played up to its last event in dry-run mode: drift is detected, nothing is
    disrupted. Exit code 1 when the scenario or a manifest it loads is invalid.

    Example: driftwave agent plan examples/scenarios/seed-001-budget-hours.yaml
    """
    result = _scenario_result(lambda: drift_plan(scenario, seed))
    if as_json:
        print(plan_json(result))
    else:
        render_plan(Console(highlight=False), result)
