"""``driftwave``: the root command line (typer + rich). Exit codes: 0 ok, 1 any error."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from agent.api.kinds import agent_kinds
from agent.api.manifests import ManifestSyntaxError
from agent.cli.demo import run_demo
from agent.cli.migrate import migrate_file, result_json, write_atomically
from agent.cli.plan import as_json as plan_json
from agent.cli.plan import plan as drift_plan
from agent.cli.plan import render as render_plan
from agent.cli.simulate import as_json as sim_json
from agent.cli.simulate import render, simulate
from agent.cli.validate import validate_paths
from agent.sim.heap import tune_for_large_simulations
from agent.sim.scenario_run import ScenarioError
from fleet.clicore import Group, show_help_when_bare

app = typer.Typer(
    name="driftwave",
    help=(
        "Safe, wave-based node patching for fleets of EKS clusters.\n\n"
        "Start with `driftwave demo`; check manifests with `driftwave validate`; move "
        "Karpenter v1beta1 manifests to v1 with `driftwave migrate`."
    ),
    cls=Group,
    add_completion=True,
    pretty_exceptions_enable=False,
)
app.callback(invoke_without_command=True)(show_help_when_bare)

FilesArg = Annotated[
    list[Path],
    typer.Argument(
        help="Manifest files or directories (every *.yaml / *.yml below them); - reads stdin, "
        "e.g. kubectl get nodepools -o yaml | driftwave validate -",
        show_default=False,
    ),
]


def _existing(paths: list[Path], param: str) -> None:
    for path in paths:
        if str(path) != "-" and not path.exists():
            raise typer.BadParameter(f"{path} does not exist", param_hint=param)


JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]


@app.command()
def validate(files: FilesArg, as_json: JsonOpt = False) -> None:
    """Check manifests against Karpenter v1's schema and rules.

    Each problem prints as FILE:DOC kind/name: field.path: what is wrong (rule). Warnings flag
    valid but risky settings (an @latest AMI alias, no disruption budget, expireAfter: Never)
    and do not fail. Exit code 1 when any error is found.

    Example: driftwave validate examples/v1
    """
    _existing(files, "FILES")
    report = validate_paths(files, agent_kinds())
    if as_json:
        print(report.as_json())
    else:
        console = Console(highlight=False)
        for finding in report.findings:
            style = "red" if finding.severity == "error" else "yellow"
            console.print(str(finding), style=style, markup=False, soft_wrap=True)
        ok = report.errors == 0
        console.print(
            ("ok: " if ok else "invalid: ") + report.summary(), style="green" if ok else "red"
        )
    raise typer.Exit(1 if report.errors else 0)


@app.command()
def migrate(
    file: Annotated[
        Path,
        typer.Argument(help="A manifest file with karpenter v1beta1 objects.", exists=True),
    ],
    output: Annotated[
        Path | None,
        typer.Option(
            "-o",
            "--output",
            help="Write the v1 manifests to this file (default: stdout).",
            dir_okay=False,
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Convert Karpenter v1beta1 NodePools and EC2NodeClasses (and workload annotations) to v1.

    Comments and key order survive. Every change is reported; what cannot be migrated
    automatically (Ubuntu AMIs, NodePools sharing an EC2NodeClass with different kubelet
    settings) is an error naming the objects, and then nothing is written. The result is
    validated like `driftwave validate`.

    Example: driftwave migrate nodepools-v1beta1.yaml -o nodepools-v1.yaml
    """
    try:
        result = migrate_file(file, agent_kinds())
    except ManifestSyntaxError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise typer.Exit(1) from exc
    except OSError as exc:
        print(f"error: cannot read {file}: {exc.strerror}", file=sys.stderr)
        raise typer.Exit(1) from exc
    if result.ok and output is not None:
        try:
            write_atomically(output, result.text)
        except OSError as exc:
            print(
                f"error: cannot write {output}: {exc.strerror}; nothing was written",
                file=sys.stderr,
            )
            raise typer.Exit(1) from exc
    if as_json:
        print(result_json(result, output))
        raise typer.Exit(0 if result.ok else 1)
    report = Console(stderr=output is None, highlight=False)
    if result.ok and output is None:
        sys.stdout.write(result.text)
    for change in result.changes:
        report.print(f"changed {change}", markup=False, soft_wrap=True)
    for finding in result.findings:
        style = "red" if finding.severity == "error" else "yellow"
        report.print(str(finding), style=style, markup=False, soft_wrap=True)
    if result.ok:
        where = f"wrote {output}" if output else "migrated"
        report.print(f"{where}: {len(result.changes)} change(s)", style="green")
    else:
        report.print("not migrated: fix the errors above; nothing was written", style="red")
    raise typer.Exit(0 if result.ok else 1)


@app.command()
def demo() -> None:
    """Run the main job on the embedded default: no servers needed.

    Today: the agent on the seed walkthrough (migrate the v1beta1 seed manifests, validate them,
    and show what each NodePool may launch from the real EC2 catalog, cheapest first).
    """
    raise typer.Exit(run_demo(Console(highlight=False)))


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
app.add_typer(agent_app)


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


def main() -> None:
    """Console-script entry point."""
    app()
