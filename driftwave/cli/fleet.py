"""``driftwave fleet``: apply a Fleet manifest, list its clusters: through the fleet API of the
context in use, or on the fleet database here (embedded; :func:`driftwave.cli.context.fleet_port`).

The fleet's domain and the client are imported inside the commands, so ``driftwave fleet
--help`` loads neither."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from driftwave.cli.context import ContextOpt, fleet_port
from driftwave.cli.group import Group, show_help_when_bare
from driftwave.cli.output import JsonOpt, OutputOpt, emit, output_format, stamp, table_console

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
    reason: Annotated[
        str | None,
        typer.Option(help="Why the Fleet changes (kept in its audit, at most 1000 characters)."),
    ] = None,
    output: OutputOpt = None,
    as_json: JsonOpt = False,
    context: ContextOpt = None,
) -> None:
    """Store a Fleet in the fleet database, like kubectl apply: clusters it adds are added,
    changed ones updated, clusters it no longer lists are marked removed (kept for history;
    running rollouts skip them). Each change is audited, before and after, with the reason.

    With a context (--context, or the current one of driftwave config) the fleet API applies
    it (the admin role); without, the database DRIFTWAVE_DATABASE_URL (default: the embedded
    SQLite file .driftwave/fleet.db). An invalid file prints its findings and changes nothing
    (exit 1).

    Example: driftwave fleet apply fleet/examples/fleet.yaml --reason "CHG-1234: prod windows"
    """
    from fleet.domain.errors import ManifestError
    from fleet.domain.fleet import Fleet
    from fleet.domain.manifests import load_one

    chosen = output_format(output, as_json)  # a usage error before anything is stored
    try:
        loaded = load_one(file, Fleet)
    except ManifestError as exc:
        for finding in exc.findings:
            print(str(finding), file=sys.stderr)
        raise typer.Exit(1) from exc
    for warning in loaded.warnings:
        print(str(warning), file=sys.stderr)
    from driftwave.client.port import dump  # the fleet, once the file is valid

    with fleet_port(context, changes=True) as port:
        result = port.apply_fleet(loaded.obj, reason)
    emit(dump(result), chosen, table=_applied)


def _applied(data: dict[str, Any]) -> None:
    console = Console(highlight=False)
    fleet, generation = data["fleet"], data["generation"]
    if data["unchanged"]:
        console.print(f"fleet/{fleet} unchanged (generation {generation})")
        return
    console.print(f"fleet/{fleet} applied (generation {generation})")
    for verb in ("added", "changed"):
        for name in data[verb]:
            console.print(f"  cluster/{name} {verb}")
    for name in data["removed"]:
        console.print(f"  cluster/{name} removed (kept for history)", style="yellow")
    for verb in ("Added", "Changed"):
        for name in data[f"accounts{verb}"]:
            console.print(f"  account/{name} {verb.lower()}")
    for name in (f for f in data["fleetChanged"] if f != "notifications"):
        console.print(f"  {name} changed")
    for verb in ("Added", "Changed", "Removed"):
        for name in data[f"webhooks{verb}"]:
            console.print(f"  webhook/{name} {verb.lower()}")


@fleet_app.command("list")
def fleet_list(
    fleet: Annotated[str | None, typer.Option(help="Only this fleet's clusters.")] = None,
    output: OutputOpt = None,
    as_json: JsonOpt = False,
    context: ContextOpt = None,
) -> None:
    """List the clusters of the applied fleets, rings in promotion order: ring, account,
    region, agent and maintenance windows.

    -o wide adds each cluster's labels, its agent's last contact and health; -o json and -o
    yaml print every field.

    Example: driftwave fleet list --fleet payments -o wide
    """
    chosen = output_format(output, as_json)
    from driftwave.client.port import dump_all

    with fleet_port(context, changes=False) as port:
        clusters = dump_all(port.clusters(fleet))
    emit(clusters, chosen, table=lambda rows: _clusters(rows, False), wide=_clusters_wide)


def _clusters_wide(clusters: list[dict[str, Any]]) -> None:
    _clusters(clusters, True)


def _clusters(clusters: list[dict[str, Any]], wide: bool) -> None:
    from rich.table import Table

    if not clusters:
        print("no clusters: apply a Fleet first (driftwave fleet apply FLEET.yaml)")
        return
    columns = ["FLEET", "CLUSTER", "RING", "ACCOUNT", "REGION", "AGENT", "WINDOWS"]
    if wide:
        columns += ["LABELS", "LAST CONTACT", "HEALTH"]
    table = Table(*columns, box=None)
    for c in sorted(clusters, key=lambda c: (c["fleet"], c.get("ringIndex", 0), c["name"])):
        row = [c["fleet"], c["name"], c["ring"], c["account"], c["region"], c["endpoint"]]
        row.append(windows_text(c))
        if wide:
            contact = c.get("contact") or {}
            labels = c.get("labels") or {}
            row.append(", ".join(f"{k}={v}" for k, v in labels.items()) or "-")
            row.append(stamp(contact.get("lastContact") or c.get("lastSeen")))
            row.append(_health(contact))
        table.add_row(*(str(cell) for cell in row))
    table_console().print(table)


def windows_text(cluster: dict[str, Any]) -> str:
    """A cluster's maintenance windows written out, ``schedule for duration (timeZone)`` joined
    by ``; ``; ``always open`` when it has none (a count when only the count is known)."""
    windows = cluster.get("maintenanceWindows")
    if windows is None:
        count = cluster.get("windows") or 0
        return f"{count} window(s)" if count else "always open"
    if not windows:
        return "always open"
    return "; ".join(_window(w) for w in windows)


def _window(window: dict[str, Any]) -> str:
    zone = window.get("timeZone") or "UTC"
    return f"{window.get('schedule', '?')} for {window.get('duration', '?')} ({zone})"


def _health(contact: dict[str, Any]) -> str:
    health = contact.get("health")
    if not health:
        return "-"
    message = contact.get("message")
    return f"{health}: {message}" if message else str(health)
