"""How ``driftwave agent``'s reports read on a terminal: the simulation's and the drift
preview's tables, the AMI report's lines, the hash table. The agent computes the reports
(:mod:`agent.sim.simulate`, :mod:`agent.sim.plan`, :mod:`agent.cloud.aws.amireport`,
:mod:`agent.hashing.report`); ``-o json`` and ``-o yaml`` print them as data instead."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from common.durations import span

if TYPE_CHECKING:
    from agent.hashing.report import Stamp


def render_simulation(console: Console, result: dict[str, Any]) -> None:
    """A simulation's report (:func:`agent.sim.simulate.simulate`) as readable tables."""
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


def render_plan(console: Console, result: dict[str, Any]) -> None:
    """A drift preview (:func:`agent.sim.plan.plan`) as readable tables."""
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
        for column in ("nodepool", "wave", "starts", "nodes", "waits for"):
            waves.add_column(column)
        for wave in result["waves"]:
            start = (
                "never (budgets allow none)"
                if wave["startSeconds"] is None
                else f"in {span(timedelta(seconds=wave['startSeconds']))} ({_day(wave['start'])})"
            )
            waves.add_row(
                wave["nodePool"],
                str(wave["wave"] or "-"),
                start,
                ", ".join(wave["nodes"]),
                budget_wait(wave),
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
            f"{counts}; done in about {span(timedelta(seconds=result['etaSeconds']))} (by "
            f"{result['eta']}, assuming {span(timedelta(seconds=result['replaceSecondsAssumed']))}"
            " per replacement)"
        )


def _day(moment: str) -> str:
    """``2026-01-06T09:00:50Z`` as ``Tue 09:00:50Z``: the day a budget's schedule reads."""
    return datetime.fromisoformat(moment).strftime("%a %H:%M:%SZ")


def budget_wait(wave: dict[str, Any]) -> str:
    """Which budgets hold a wave back, and for how long: ``15h30m for budgets[3] (nodes 0,
    schedule '0 17 * * mon-fri' for 16h, Drifted) to end`` (empty when none does)."""
    held = wave.get("waitsFor") or []
    if not held:
        return ""
    named = " and ".join(_budget(b) for b in held)
    if wave["startSeconds"] is None:
        return f"{named}: allows none, and no schedule will change that"
    waited = span(timedelta(seconds=wave.get("waitSeconds", 0.0)))
    return f"{waited} for {named} to end"


def _budget(budget: dict[str, Any]) -> str:
    parts = [f"nodes {budget['nodes']}"]
    if budget.get("schedule"):
        zone = f" {budget['timeZone']}" if budget.get("timeZone") else ""
        parts.append(f"schedule '{budget['schedule']}'{zone} for {budget['duration']}")
    if budget.get("reasons"):
        parts.append(", ".join(budget["reasons"]))
    return f"budgets[{budget['budget']}] ({', '.join(parts)})"


def render_amis(result: dict[str, Any], write: Callable[[str], None] = print) -> None:
    """An AMI report (:func:`agent.cloud.aws.amireport.report`) for a terminal, a line per
    ``write``."""
    write(f"Kubernetes {result['kubernetesVersion']}")
    for nodeclass in result["nodeClasses"]:
        write(f"\nEC2NodeClass {nodeclass['name']}")
        if nodeclass.get("error"):
            write(f"  error: {nodeclass['error']}")
        for image in nodeclass["images"]:
            mark = "*" if image["chosen"] else " "
            deprecated = " (deprecated)" if image["deprecated"] else ""
            write(f" {mark} {image['id']}  {image['name']}{deprecated}")
            write(f"     created {image['created']}; {', '.join(image['requirements'])}")
            write(f"     {image['why']}")
    write("\n* chosen: written to status.amis; nodes launch from these")


def hash_table(found: list[Stamp]) -> list[str]:
    """One line per object: kind/name, hash, version and what the object carries."""
    rows = [("FILE", "OBJECT", "HASH", "VERSION", "KARPENTER'S STAMP")]
    rows += [(s.source, f"{s.kind}/{s.name}", s.hash, s.hash_version, s.verdict) for s in found]
    last = len(rows[0]) - 1
    widths = [max(len(r[i]) for r in rows) for i in range(last)]
    return [
        "  ".join(cell.ljust(widths[i]) if i < last else cell for i, cell in enumerate(row))
        for row in rows
    ]
