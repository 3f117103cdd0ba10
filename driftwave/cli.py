"""``driftwave``: the root command line (typer + rich); it mounts every command group.

Exit codes: 0 ok, 1 any error."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from agent.api.kinds import agent_kinds
from agent.api.lint import lint
from agent.api.manifests import ManifestSyntaxError
from agent.cli.demo import run_demo
from agent.cli.migrate import migrate_file, result_json, write_atomically
from agent.cli.validate import validate_paths
from fleet.cli_agent import agent_app
from fleet.cli_rollout import rollout_app
from fleet.clicore import Group, JsonOpt, show_help_when_bare
from fleet.domain.lint import fleet_lint
from fleet.domain.manifests import fleet_kinds

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


@app.command()
def validate(files: FilesArg, as_json: JsonOpt = False) -> None:
    """Check manifests against Karpenter v1's schema and rules, and driftwave's own kinds
    (Fleet, Release, Scenario).

    Each problem prints as FILE:DOC kind/name: field.path: what is wrong (rule). Warnings flag
    valid but risky settings (an @latest AMI alias, no disruption budget, expireAfter: Never)
    and do not fail. Exit code 1 when any error is found.

    Example: driftwave validate examples/v1
    """
    _existing(files, "FILES")
    report = validate_paths(files, {**agent_kinds(), **fleet_kinds()}, (lint, fleet_lint))
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


app.add_typer(agent_app)
app.add_typer(rollout_app)


def main() -> None:
    """Console-script entry point."""
    app()
