"""The operational ``driftwave rollout`` commands: start, status, list, pause, resume, abort,
approve, rollback and audit. They act on the fleet through the API of the context in use, or on
the fleet database here (embedded; :func:`driftwave.cli.context.fleet_port`); the scheduler
(``driftwave scheduler``) carries the rollout out.

The fleet's domain and the client are imported inside the commands, so the help loads
neither."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from driftwave.cli.context import ContextOpt, fleet_port
from driftwave.cli.output import (
    JsonOpt,
    Output,
    OutputOpt,
    emit,
    output_format,
    stamp,
    table_console,
)

if TYPE_CHECKING:
    from driftwave.client.port import Command

RolloutArg = Annotated[str, typer.Argument(help="The rollout's id (see driftwave rollout list).")]


def start(
    release: Annotated[
        Path,
        typer.Argument(help="A driftwave.io/v1alpha1 Release file.", exists=True, dir_okay=False),
    ],
    queue: Annotated[
        bool,
        typer.Option(
            "--queue",
            help="When a live rollout holds some of its clusters, queue the rollout behind it "
            "(state queued) instead of refusing; it starts once no rollout holds them.",
        ),
    ] = False,
    output: OutputOpt = None,
    as_json: JsonOpt = False,
    context: ContextOpt = None,
) -> None:
    """Start rolling a Release through its Fleet (applied before with driftwave fleet apply).

    The rollout is planned now (rings, waves, clusters, as driftwave rollout plan shows) and
    stored; the scheduler carries it out. Prints the rollout's id.

    Refused (exit 1, nothing stored) when the release selects no cluster, when the release
    already has a live or queued rollout, or when a live rollout (planned, running, soaking,
    gating, awaiting-approval, rolling-back or rollback-failed) holds one of its clusters: one
    live rollout per cluster. Two rollouts on the same cluster are apart only when both pin
    AMIs on EC2NodeClasses listed by name and no name is in both lists (the fleet cannot see a
    cluster's classes, so matchLabels or a Kubernetes version count as every class). With
    --queue the rollout waits in state queued instead, planned again when it starts.

    Example: driftwave rollout start release.yaml --queue
    """
    from driftwave.client.port import dump
    from fleet.domain.errors import ManifestError
    from fleet.domain.manifests import load_one
    from fleet.domain.release import Release

    chosen = output_format(output, as_json)  # a usage error before anything is stored
    try:
        loaded = load_one(release, Release)
    except ManifestError as exc:
        for finding in exc.findings:
            print(str(finding), file=sys.stderr)
        raise typer.Exit(1) from exc
    for warning in loaded.warnings:
        print(str(warning), file=sys.stderr)
    with fleet_port(context, changes=True) as port:
        result = dump(port.start(loaded.obj, queue))
    emit(result, chosen, table=_started)


def _started(result: dict[str, Any]) -> None:
    from fleet.domain.machine import RolloutState

    if result["state"] == RolloutState.QUEUED:
        print(f"rollout {result['id']} queued: {result['reason']}")
    else:
        waves, state = result["waves"], result["state"]
        print(f"rollout {result['id']} started: {waves} wave(s), state {state}")
    print(f"follow it: driftwave rollout status {result['id']} --watch")


def status(
    rollout: RolloutArg,
    output: OutputOpt = None,
    as_json: JsonOpt = False,
    watch: Annotated[
        bool, typer.Option("--watch", "-w", help="Refresh until the rollout ends (Ctrl-C stops).")
    ] = False,
    interval: Annotated[float, typer.Option(help="Seconds between refreshes.", min=0.2)] = 2.0,
    context: ContextOpt = None,
) -> None:
    """Show where a rollout stands: each ring's waves and gates, each cluster's step.

    With --watch the view refreshes until the rollout ends; with -o json or -o yaml the
    rollout's final state is printed then.

    Example: driftwave rollout status ro-k2p9xq4m --watch
    """
    chosen = output_format(output, as_json)
    data_out = chosen in (Output.JSON, Output.YAML)
    from rich.live import Live

    from driftwave.cli.status_view import render_status
    from driftwave.client.port import dump
    from fleet.domain.machine import TERMINAL, RolloutState

    with fleet_port(context, changes=False) as port:
        current = dump(port.status(rollout))
        console = table_console(stderr=data_out and watch)  # stdout holds only the data
        if not watch:
            emit(current, chosen, table=lambda shown: console.print(render_status(shown)))
            return
        try:
            with Live(render_status(current), console=console, refresh_per_second=4) as live:
                while RolloutState(current["state"]) not in TERMINAL:
                    time.sleep(interval)
                    current = dump(port.status(rollout))
                    live.update(render_status(current))
        except KeyboardInterrupt:
            pass
        if data_out:
            emit(current, chosen, table=lambda _: None)


def list_(
    active: Annotated[bool, typer.Option(help="Only rollouts not finished yet.")] = False,
    limit: Annotated[
        int, typer.Option(min=1, help="Show the newest this many rollouts (at least 1).")
    ] = 50,
    output: OutputOpt = None,
    as_json: JsonOpt = False,
    context: ContextOpt = None,
) -> None:
    """List the newest rollouts (50 unless --limit says), oldest first.

    -o wide adds the reason each rollout stands where it does and when it finished.

    Example: driftwave rollout list --active -o wide
    """
    chosen = output_format(output, as_json)
    from driftwave.client.port import dump_all

    with fleet_port(context, changes=False) as port:
        rows = dump_all(port.rollouts(active, limit))
    emit(rows, chosen, table=lambda shown: _rollouts(shown, False), wide=_rollouts_wide)


def _rollouts_wide(rows: list[dict[str, Any]]) -> None:
    _rollouts(rows, True)


def _rollouts(rows: list[dict[str, Any]], wide: bool) -> None:
    columns = ["ID", "RELEASE", "FLEET", "STATE", "STEPS", "CREATED"]
    if wide:
        columns += ["FINISHED", "REASON"]
    table = Table(*columns, box=None)
    for row in rows:
        steps = ", ".join(f"{n} {s}" for s, n in sorted(row["steps"].items()))
        state = row["state"] + (" (paused)" if row["paused"] else "")
        if row["queuedBehind"]:
            state += f" (waiting for rollout {row['queuedBehind']} to end)"
        cells = [row["id"], row["release"], row["fleet"], state, steps, stamp(row["createdAt"])]
        if wide:
            cells += [stamp(row.get("finishedAt")), row.get("reason") or "-"]
        table.add_row(*cells)
    table_console().print(table)


def _command(name: Command, doc: str) -> Any:
    """The command ``name`` of the fleet port (:meth:`~driftwave.client.port.FleetPort.command`)."""

    def command(
        rollout: RolloutArg,
        output: OutputOpt = None,
        as_json: JsonOpt = False,
        context: ContextOpt = None,
    ) -> None:
        from driftwave.client.port import dump

        chosen = output_format(output, as_json)  # a usage error before anything changes
        with fleet_port(context, changes=True) as port:
            result = dump(port.command(name, rollout))
        emit(result, chosen, table=lambda r: print(said(name, rollout, r)))

    command.__doc__ = doc
    command.__name__ = name
    return command


def said(name: str, rollout: str, result: dict[str, Any]) -> str:
    """What an operator's command did, in words: a rollback has only started when the command
    returns (the scheduler carries it out), so it says how to follow it."""
    if name == "rollback":
        return (
            f"rollout {rollout}: rollback started: {result.get('clusters', 0)} cluster(s) to roll "
            f"back (follow it with: driftwave rollout status {rollout} --watch)"
        )
    done = {"pause": "paused", "resume": "resumed", "abort": "aborted"}.get(name, f"{name} done")
    return f"rollout {rollout}: {done} (state {result.get('state', 'unknown')})"


pause = _command(
    "pause",
    "Pause a rollout: no new step starts and it does not move on; steps already out finish.\n\n"
    "Example: driftwave rollout pause ro-k2p9xq4m",
)
resume = _command(
    "resume",
    "Resume a paused rollout exactly where it stood.\n\n"
    "Example: driftwave rollout resume ro-k2p9xq4m",
)
abort = _command(
    "abort",
    "Abort a rollout: nothing more starts; clusters keep what they have (roll them back with "
    "driftwave rollout rollback).\n\nExample: driftwave rollout abort ro-k2p9xq4m",
)
rollback = _command(
    "rollback",
    "Roll back every cluster the rollout has touched to what it ran before (ignores pauses, "
    "freezes and maintenance windows).\n\nExample: driftwave rollout rollback ro-k2p9xq4m",
)


def approve(
    rollout: RolloutArg,
    ring: Annotated[
        str,
        typer.Option(
            "--ring", help="The ring approved (required: it must be the one the rollout waits for)."
        ),
    ],
    comment: Annotated[str, typer.Option(help="Why, for the audit log.")] = "",
    output: OutputOpt = None,
    as_json: JsonOpt = False,
    context: ContextOpt = None,
) -> None:
    """Approve the ring a rollout waits for (rings with requireApproval: true).

    --ring names it: a rollout not waiting, or waiting for another ring, is refused (exit 1)
    with the ring that waits. Through a context the API checks your role (approver, within
    its rings) and records your signed-in name; embedded, the OS user marked (embedded).

    Example: driftwave rollout approve ro-k2p9xq4m --ring prod --comment "canary clean"
    """
    from driftwave.client.port import dump

    chosen = output_format(output, as_json)  # a usage error before anything changes
    with fleet_port(context, changes=True) as port:
        result = dump(port.approve(rollout, ring, comment))
        actor = port.actor() if chosen not in (Output.JSON, Output.YAML) else ""
    emit(
        result,
        chosen,
        table=lambda r: print(f"rollout {rollout}: ring {r['approved']} approved by {actor}"),
    )


def audit(
    rollout: RolloutArg,
    output: OutputOpt = None,
    as_json: JsonOpt = False,
    context: ContextOpt = None,
) -> None:
    """Print a rollout's audit trail.

    Every command and transition: who did it, when, what changed and why. Values are shown
    whole (long ones wrap); -o wide shows the before and after of each change apart, and the
    trace and span each belongs to.

    Example: driftwave rollout audit ro-k2p9xq4m -o wide
    """
    chosen = output_format(output, as_json)
    from driftwave.client.port import dump_all

    with fleet_port(context, changes=False) as port:
        rows = dump_all(port.audit(rollout))
    emit(rows, chosen, table=lambda shown: _audit(shown, False), wide=_audit_wide)


def _audit_wide(rows: list[dict[str, Any]]) -> None:
    _audit(rows, True)


def _audit(rows: list[dict[str, Any]], wide: bool) -> None:
    table = Table(box=None)
    for name in ("TIME", "ACTOR", "ACTION", "OBJECT"):
        table.add_column(name, no_wrap=name == "TIME")
    changes = ("BEFORE", "AFTER") if wide else ("CHANGE",)
    for name in (*changes, "REASON"):
        table.add_column(name, overflow="fold", ratio=1)
    if wide:
        table.add_column("TRACE", no_wrap=True)
        table.add_column("SPAN", no_wrap=True)
    for row in rows:
        before, after = row.get("before"), row.get("after")
        cells = [stamp(row["at"]), row["actor"], row["action"], row["object"]]
        if wide:
            cells += [_values(before), _values(after), audit_reason(row)]
            cells += [row.get("traceId") or "-", row.get("spanId") or "-"]
        else:
            cells += [f"{_values(before)} → {_values(after)}", audit_reason(row)]
        table.add_row(*cells)
    table_console().print(table)


def audit_reason(row: dict[str, Any]) -> str:
    """An audit entry's reason: its ``reason``, else the ``reason`` its ``after`` recorded, else
    ``-``."""
    after = row.get("after")
    reason = row.get("reason") or (after.get("reason") if isinstance(after, dict) else None)
    return str(reason) if reason else "-"


def _values(value: dict[str, Any] | None) -> str:
    """A before or after, whole: ``key=value`` pairs (values that are not text as JSON)."""
    if not value:
        return "-"
    return ", ".join(
        f"{k}={v if isinstance(v, str) else json.dumps(v)}"
        for k, v in value.items()
        if k != "reason"
    )
