"""``driftwave fleet``: apply a Fleet manifest to the fleet database, list its clusters.

The fleet's domain and service layer are imported inside the commands, so ``driftwave fleet
--help`` loads neither."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from fleet.cli_context import ActorOpt, fleet_context, run
from fleet.clicore import Group, JsonOpt, show_help_when_bare, table_console

fleet_app = typer.Typer(
    name="fleet",
    help="The clusters driftwave manages: their rings, accounts, agents and maintenance windows.",
    cls=Group,
)
fleet_app.callback(invoke_without_command=True)(show_help_when_bare)


@fleet_app.command("apply")
def fleet_apply(
    file: Annotated[
        Path,
        typer.Argument(help="A driftwave.io/v1alpha1 Fleet file.", exists=True, dir_okay=False),
    ],
    actor: ActorOpt,
    as_json: JsonOpt = False,
) -> None:
    """Store a Fleet in the fleet database, like kubectl apply: clusters it adds are added,
    changed ones updated, clusters it no longer lists are marked removed (kept for history;
    running rollouts skip them).

    The database is DRIFTWAVE_DATABASE_URL (default: the embedded SQLite file
    .driftwave/fleet.db). An invalid file prints its findings and changes nothing (exit 1).

    Example: driftwave fleet apply fleet/examples/fleet.yaml
    """
    from fleet.domain.errors import ManifestError
    from fleet.domain.fleet import Fleet
    from fleet.domain.manifests import load_one

    try:
        loaded = load_one(file, Fleet)
    except ManifestError as exc:
        for finding in exc.findings:
            print(str(finding), file=sys.stderr)
        raise typer.Exit(1) from exc
    for warning in loaded.warnings:
        print(str(warning), file=sys.stderr)
    from fleet.service.fleets import apply_fleet  # the fleet's database, once the file is valid

    with fleet_context() as ctx:
        result = run(lambda: apply_fleet(ctx, loaded.obj, actor))
    if as_json:
        print(
            json.dumps(
                {
                    "fleet": result.fleet,
                    "generation": result.generation,
                    "added": list(result.added),
                    "changed": list(result.changed),
                    "removed": list(result.removed),
                },
                indent=2,
            )
        )
        return
    console = Console(highlight=False)
    if result.unchanged:
        console.print(f"fleet/{result.fleet} unchanged (generation {result.generation})")
        return
    console.print(f"fleet/{result.fleet} applied (generation {result.generation})")
    for verb, names in (("added", result.added), ("changed", result.changed)):
        for name in names:
            console.print(f"  cluster/{name} {verb}")
    for name in result.removed:
        console.print(f"  cluster/{name} removed (kept for history)", style="yellow")


@fleet_app.command("list")
def fleet_list(
    fleet: Annotated[str | None, typer.Option(help="Only this fleet's clusters.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """List the clusters of the applied fleets: ring, account, region, agent and windows.

    Example: driftwave fleet list --fleet payments
    """
    from rich.table import Table

    from fleet.service.fleets import list_clusters

    with fleet_context() as ctx:
        clusters = run(lambda: list_clusters(ctx, fleet))
    if as_json:
        print(json.dumps(clusters, indent=2))
        return
    if not clusters:
        print("no clusters: apply a Fleet first (driftwave fleet apply FLEET.yaml)")
        return
    table = Table("FLEET", "CLUSTER", "RING", "ACCOUNT", "REGION", "AGENT", "WINDOWS", box=None)
    for c in clusters:
        windows = str(c["windows"]) if c["windows"] else "always open"
        table.add_row(
            c["fleet"], c["name"], c["ring"], c["account"], c["region"], c["endpoint"], windows
        )
    table_console().print(table)
