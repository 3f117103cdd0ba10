"""The operational ``driftwave rollout`` commands: start, status, list, pause, resume, abort,
approve, rollback and audit. They act on the fleet database (``DRIFTWAVE_DATABASE_URL``); the
scheduler (``driftwave scheduler``) carries the rollout out.

The fleet's domain and service layer are imported inside the commands, so the help loads
neither."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from fleet.cli_context import ActorOpt, fail, fleet_context, run
from fleet.clicore import JsonOpt, table_console

RolloutArg = Annotated[str, typer.Argument(help="The rollout's id (see driftwave rollout list).")]


def start(
    release: Annotated[
        Path,
        typer.Argument(help="A driftwave.io/v1alpha1 Release file.", exists=True, dir_okay=False),
    ],
    actor: ActorOpt,
    queue: Annotated[
        bool,
        typer.Option(
            "--queue",
            help="When a live rollout holds some of its clusters, queue the rollout behind it "
            "(state queued) instead of refusing; it starts once no rollout holds them.",
        ),
    ] = False,
    as_json: JsonOpt = False,
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
    from fleet.db.errors import ReleaseConflict
    from fleet.domain.errors import ManifestError
    from fleet.domain.machine import RolloutState
    from fleet.domain.manifests import load_one
    from fleet.domain.release import Release
    from fleet.service import rollouts

    try:
        loaded = load_one(release, Release)
    except ManifestError as exc:
        for finding in exc.findings:
            print(str(finding), file=sys.stderr)
        raise typer.Exit(1) from exc
    with fleet_context() as ctx:
        try:
            result = run(lambda: rollouts.start_rollout(ctx, loaded.obj, actor, queue=queue))
        except ReleaseConflict as exc:
            fail(f"{exc} (give the changed release a new metadata.name)")
    if as_json:
        print(json.dumps(result, indent=2))
        return
    if result["state"] == RolloutState.QUEUED:
        print(f"rollout {result['id']} queued: {result['reason']}")
    else:
        waves, state = result["waves"], result["state"]
        print(f"rollout {result['id']} started: {waves} wave(s), state {state}")
    print(f"follow it: driftwave rollout status {result['id']} --watch")


def status(
    rollout: RolloutArg,
    as_json: JsonOpt = False,
    watch: Annotated[
        bool, typer.Option("--watch", "-w", help="Refresh until the rollout ends (Ctrl-C stops).")
    ] = False,
    interval: Annotated[float, typer.Option(help="Seconds between refreshes.", min=0.2)] = 2.0,
) -> None:
    """Show where a rollout stands: each ring's waves and gates, each cluster's step.

    Example: driftwave rollout status ro-k2p9xq4m --watch
    """
    from rich.live import Live

    from fleet.domain.machine import TERMINAL, RolloutState
    from fleet.service.queries import rollout_status
    from fleet.status_view import render_status

    with fleet_context() as ctx:
        current = run(lambda: rollout_status(ctx, rollout))
        if as_json and not watch:
            print(json.dumps(current, indent=2))
            return
        console = table_console()
        if not watch:
            console.print(render_status(current))
            return
        try:
            with Live(render_status(current), console=console, refresh_per_second=4) as live:
                while RolloutState(current["state"]) not in TERMINAL:
                    time.sleep(interval)
                    current = run(lambda: rollout_status(ctx, rollout))
                    live.update(render_status(current))
        except KeyboardInterrupt:
            pass
        if as_json:
            print(json.dumps(current, indent=2))


def list_(
    active: Annotated[bool, typer.Option(help="Only rollouts not finished yet.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """List rollouts, oldest first.

    Example: driftwave rollout list --active
    """
    from fleet.service.queries import list_rollouts

    with fleet_context() as ctx:
        rows = run(lambda: list_rollouts(ctx, active=active))
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    table = Table("ID", "RELEASE", "FLEET", "STATE", "STEPS", "CREATED", box=None)
    for row in rows:
        steps = ", ".join(f"{n} {s}" for s, n in sorted(row["steps"].items()))
        state = row["state"] + (" (paused)" if row["paused"] else "")
        if row["queuedBehind"]:
            state += f" (waiting for rollout {row['queuedBehind']} to end)"
        table.add_row(row["id"], row["release"], row["fleet"], state, steps, row["createdAt"])
    table_console().print(table)


def _command(name: str, doc: str) -> Any:
    """A command that calls :mod:`fleet.service.rollouts`' function of the same name."""

    def command(rollout: RolloutArg, actor: ActorOpt, as_json: JsonOpt = False) -> None:
        from fleet.service import rollouts

        call = getattr(rollouts, name)
        with fleet_context() as ctx:
            result = run(lambda: call(ctx, rollout, actor))
        if as_json:
            print(json.dumps(result, indent=2))
        else:
            print(f"rollout {rollout}: {name} done ({_summary(result)})")

    command.__doc__ = doc
    command.__name__ = name
    return command


def _summary(result: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in result.items() if k != "id")


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
    actor: ActorOpt,
    ring: Annotated[
        str,
        typer.Option(
            "--ring", help="The ring approved (required: it must be the one the rollout waits for)."
        ),
    ],
    comment: Annotated[str, typer.Option(help="Why, for the audit log.")] = "",
    as_json: JsonOpt = False,
) -> None:
    """Approve the ring a rollout waits for (rings with requireApproval: true).

    --ring names it: a rollout not waiting, or waiting for another ring, is refused (exit 1)
    with the ring that waits.

    Example: driftwave rollout approve ro-k2p9xq4m --ring prod --comment "canary clean"
    """
    from fleet.service import rollouts

    with fleet_context() as ctx:
        result = run(lambda: rollouts.approve(ctx, rollout, actor, ring, comment))
    if as_json:
        print(json.dumps(result, indent=2))
    else:
        print(f"rollout {rollout}: ring {result['approved']} approved by {actor}")


def audit(rollout: RolloutArg, as_json: JsonOpt = False) -> None:
    """Print a rollout's audit trail.

    Every command and transition: who did it, when, what changed, and the trace and span it
    belongs to.

    Example: driftwave rollout audit ro-k2p9xq4m
    """
    from fleet.service.queries import audit_trail

    with fleet_context() as ctx:
        rows = run(lambda: audit_trail(ctx, rollout))
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    table = Table("TIME", "ACTOR", "ACTION", "OBJECT", "CHANGE", "TRACE/SPAN", box=None)
    for row in rows:
        change = f"{_brief(row['before'])} → {_brief(row['after'])}"
        trace = f"{(row['traceId'] or '-')[:12]}…/{row['spanId'] or '-'}"
        table.add_row(row["at"], row["actor"], row["action"], row["object"], change, trace)
    table_console().print(table)


def _brief(value: dict[str, Any] | None) -> str:
    if not value:
        return "-"
    return ", ".join(f"{k}={v}" for k, v in value.items() if k != "reason")[:80]
