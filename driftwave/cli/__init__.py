"""``driftwave``: the command line (typer + rich), the root command here; it mounts every
command group.

One module per command group: :mod:`~driftwave.cli.agent` (with ``agent serve`` in
:mod:`~driftwave.cli.agent_serve`, its simulated and real-cluster modes in
:mod:`~driftwave.cli.agent_serve_sim` and :mod:`~driftwave.cli.agent_serve_live`, the reports'
terminal views in :mod:`~driftwave.cli.agent_views` and the walkthrough in
:mod:`~driftwave.cli.walkthrough`),
:mod:`~driftwave.cli.fleet`, :mod:`~driftwave.cli.cluster`, :mod:`~driftwave.cli.rollout` (its
operations in :mod:`~driftwave.cli.rollout_ops`, the live status in
:mod:`~driftwave.cli.status_view`), :mod:`~driftwave.cli.db`, :mod:`~driftwave.cli.audit`, the
long-running processes (:mod:`~driftwave.cli.processes`), the contexts
(:mod:`~driftwave.cli.config_cmd`) and ``login`` (:mod:`~driftwave.cli.login`). What they share:
the group and its exit codes (:mod:`~driftwave.cli.group`), help (:mod:`~driftwave.cli.help`),
output formats (:mod:`~driftwave.cli.output`), the fleet a command acts on
(:mod:`~driftwave.cli.context`). Only this package imports typer.

The command groups load when invoked (:mod:`driftwave.cli.lazy`) and each command imports what it
runs inside it, so ``driftwave --help`` (and a group's or a command's help) starts at once,
without the simulator, the fleet database, Celery or the web stack.

Exit codes: 0 ok, 1 any error."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from driftwave.cli.group import show_help_when_bare
from driftwave.cli.lazy import LazyGroup, Mount
from driftwave.cli.login import login
from driftwave.cli.output import JsonOpt, Output, OutputOpt, emit, output_format
from driftwave.cli.processes import api, scheduler, worker


class Driftwave(LazyGroup):
    """The root group: its own commands, then the command groups, loaded when invoked."""

    mounts = (
        Mount(
            "agent",
            "driftwave.cli.agent:agent_app",
            "The per-cluster agent: serve its HTTP API over a simulated cluster, simulate a "
            "scenario, preview what drift would do, or walk through the seed manifests.",
        ),
        Mount(
            "fleet",
            "driftwave.cli.fleet:fleet_app",
            "The clusters driftwave manages: their rings, accounts, agents and maintenance "
            "windows.",
        ),
        Mount(
            "cluster",
            "driftwave.cli.cluster:cluster_app",
            "One cluster across rollouts: every step taken on it, with images and outcomes.",
        ),
        Mount("db", "driftwave.cli.db:db_app", "The fleet database's schema (Alembic migrations)."),
        Mount(
            "config",
            "driftwave.cli.config_cmd:config_app",
            "The contexts the fleet commands use: which fleet API, its CA, your credentials.",
        ),
        Mount(
            "rollout",
            "driftwave.cli.rollout:rollout_app",
            "Roll a Release (a new AMI or Kubernetes version) through a Fleet's rings in waves.",
        ),
        Mount(
            "audit",
            "driftwave.cli.audit:audit_app",
            "The audit log: check that no row was changed or removed since it was written, and "
            "send the rows to an OpenTelemetry collector as log records.",
        ),
        Mount(
            "token",
            "driftwave.cli.token:token_app",
            "Tokens for automation: create (the secret is shown once), list and revoke.",
        ),
    )


app = typer.Typer(
    name="driftwave",
    help=(
        "Safe, wave-based node patching for fleets of EKS clusters.\n\n"
        "Start with `driftwave demo`; check manifests with `driftwave validate`; move "
        "Karpenter v1beta1 manifests to v1 with `driftwave migrate`."
    ),
    cls=Driftwave,
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
def validate(files: FilesArg, output: OutputOpt = None, as_json: JsonOpt = False) -> None:
    """Check manifests against Karpenter v1's schema and rules, and driftwave's own kinds
    (Fleet, Release, Scenario).

    Each problem prints as FILE:LINE kind/name: field.path: what is wrong (rule). Warnings flag
    valid but risky settings (an @latest AMI alias, no disruption budget, expireAfter: Never)
    and do not fail. Exit code 1 when any error is found.

    Example: driftwave validate examples/v1
    """
    from agent.api.lint import lint
    from agent.api.validate import validate_paths
    from driftwave.cli.kinds import Kinds, check_scenario

    chosen = output_format(output, as_json)
    _existing(files, "FILES")
    kinds = Kinds()
    report = validate_paths(files, kinds, (lint, kinds.fleet_lint), check_scenario)

    def table(_: object) -> None:
        console = Console(highlight=False)
        for finding in report.findings:
            style = "red" if finding.severity == "error" else "yellow"
            console.print(str(finding), style=style, markup=False, soft_wrap=True)
        ok = report.errors == 0
        console.print(
            ("ok: " if ok else "invalid: ") + report.summary(), style="green" if ok else "red"
        )

    emit(json.loads(report.as_json()), chosen, table=table)
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
    from agent.api.kinds import agent_kinds
    from agent.api.migration.files import migrate_file, result_json, write_atomically
    from common.documents import ManifestSyntaxError

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


def _webhook_urls(urls: list[str] | None) -> list[str] | None:
    """``--notify`` values: http(s) URLs with a host (else a usage error naming the value)."""
    for url in urls or []:
        scheme, _, rest = url.partition("://")
        if scheme not in ("http", "https") or not rest.split("/", 1)[0]:
            raise typer.BadParameter(
                f"{url!r} is not an http(s) URL such as http://127.0.0.1:9000/"
            )
    return urls


@app.command()
def demo(
    clusters: Annotated[
        int, typer.Option(help="Simulated clusters (at least 4).", min=4, max=64)
    ] = 12,
    nodes: Annotated[
        int, typer.Option(help="About how many nodes each cluster runs.", min=10, max=2000)
    ] = 200,
    faulty_ami: Annotated[
        bool,
        typer.Option(
            "--faulty-ami",
            help="Make the new image bad: its nodes never become Ready. The first wave fails its "
            "gate and is rolled back; no later ring is touched.",
        ),
    ] = False,
    speed: Annotated[
        float, typer.Option(help="Simulated seconds per real second in the clusters.", min=1)
    ] = 600.0,
    workdir: Annotated[
        Path | None,
        typer.Option(
            help="Keep the database, logs, report and trace here (default: a new temp folder).",
            file_okay=False,
        ),
    ] = None,
    notify: Annotated[
        list[str] | None,
        typer.Option(
            "--notify",
            metavar="URL",
            help="Post the rollout's events (CloudEvents JSON) to this webhook; repeatable.",
            callback=_webhook_urls,
        ),
    ] = None,
    output: OutputOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Roll a new AMI through a fleet of simulated clusters, on the embedded default (no servers).

    Starts simulated EKS clusters (the real EC2 catalog, ~200 nodes each) behind the agent's
    HTTP API on loopback, a real Celery worker on the embedded broker, and the scheduler here;
    applies a Fleet of 12 clusters in four rings (canary, dev, staging, prod) and a Release
    pinning a newer AL2023 AMI, shows the rollout live (prod waits for approval: the demo
    approves it), then prints a table per ring / wave / cluster and writes an HTML report and
    a trace file (JSON lines, one span per line). -o json (or --json) and -o yaml print the
    summary as data on stdout, the live view going to stderr.

    Example: driftwave demo --faulty-ami
    """
    from driftwave.demo.processes import DemoError
    from driftwave.demo.run import DemoOptions, run_demo
    from driftwave.demo.summary import unexpected

    chosen = output_format(output, as_json)
    data_out = chosen in (Output.JSON, Output.YAML)
    console = Console(highlight=False, stderr=data_out)
    options = DemoOptions(
        clusters=clusters,
        nodes=nodes,
        faulty=faulty_ami,
        speed=speed,
        workdir=workdir,
        notify=tuple(notify or ()),
    )
    try:
        result = run_demo(options, console)
    except DemoError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise typer.Exit(1) from exc
    if data_out:
        emit(result, chosen, table=lambda _: None)
    if (why := unexpected(result, faulty_ami)) is not None:
        print(f"error: {why}", file=sys.stderr)
        raise typer.Exit(1)


app.command()(scheduler)
app.command()(worker)
app.command()(api)
app.command()(login)


def main() -> None:
    """Console-script entry point."""
    app()
