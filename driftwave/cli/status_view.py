"""Rendering a rollout's status for a terminal (rich): the header, each ring's waves with their
gate, and each cluster's step. Used by ``driftwave rollout status`` (also with ``--watch``) and
the demo's live view.

Under the header: where the rollout stands ("ring 3 of 4 (staging), wave 2 of 3", numbered from
1), why ("running wave 2 of 3 of ring staging: 1 of 2 cluster(s) converged", a halted gate's
failing checks with their units), the next event and the time left ("next: soak of ... ends in
6m52s"), the ETA in UTC with what it excludes, and, for a ring waiting for approval, the command
that gives it and who may (or why an approval is refused now: an earlier ring's cluster no
longer holds). Each cluster's NOW column is what it runs on the fleet's last observation, with
its age. Its NOTE is what its step waits for, or its error: in red when the step failed, else
as a warning in yellow (an agent retried while the step keeps its state)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from rich.console import Group as RenderGroup
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from fleet.domain.machine import TERMINAL
from fleet.domain.waits import span

STATE_STYLE = {
    "succeeded": "green",
    "verified": "green",
    "converged": "green",
    "passed": "green",
    "rolled-back": "yellow",
    "rolling-back": "yellow",
    "halted": "red",
    "failed": "red",
    "timed-out": "red",
    "unreachable": "red",
    "aborted": "red",
    "awaiting-approval": "magenta",
}


def _styled(state: str | None) -> Text:
    text = state or "-"
    return Text(text, style=STATE_STYLE.get(text, ""))


MOVING = ("dispatched", "progressing")
NOW_STYLE = {"regressed": "red", "rolled-back": "yellow", "on-target": "green"}


def now_cell(cluster: dict[str, Any]) -> Text:
    """What the cluster runs now: a wave under way, its progress as the agent reports it
    (``12/40 on target``); otherwise the fleet's last observation of the cluster judged against
    the step, with its age (``rolled back: 40/40 on ami-0a1 (observed 12 s ago)``), never the
    step's history."""
    now = cluster.get("now") or {}
    progress = cluster.get("progress") or {}
    nodes, on_target = progress.get("nodes"), progress.get("onTarget")
    if cluster.get("state") in MOVING and not cluster.get("rollback") and nodes is not None:
        return Text(f"{on_target}/{nodes} on target")
    if not now:
        return Text("")
    if now.get("holding") == "superseded":
        return Text(f"superseded by {now.get('supersededBy')}", style="dim")
    return Text(str(now.get("text") or ""), style=NOW_STYLE.get(str(now.get("holding")), ""))


def _gate(wave: dict[str, Any]) -> str:
    gate = wave.get("gate")
    if not gate:
        return ""
    if gate.get("passed"):
        return "gate passed"
    failed = [c["name"] for c in gate.get("checks", []) if c.get("passed") is False]
    return "gate failed: " + ", ".join(failed) if failed else "gate pending"


def render_status(status: dict[str, Any]) -> RenderableType:
    """The whole status as one rich renderable."""
    header = Text.assemble(
        (f"rollout {status['id']}", "bold"),
        f"  release {status['release']} on fleet {status['fleet']}  ",
        _styled(status["state"]),
        (" (paused)" if status.get("paused") else "", "magenta"),
    )
    lines = standing(status)
    waves = Table("RING", "WAVE", "STATE", "CLUSTERS", "STARTED", "FINISHED", "GATE", box=None)
    for ring in status["rings"]:
        for wave in ring["waves"]:
            waves.add_row(
                ring["name"],
                str(wave["index"]),
                _styled(wave["state"]),
                ", ".join(wave["clusters"]),
                _time(wave.get("startedAt")),
                _time(wave.get("finishedAt")),
                _gate(wave),
            )
    clusters = Table(
        "CLUSTER",
        "RING",
        "STEP",
        "ROLLBACK",
        "NOW (OBSERVED)",
        "IMAGE BEFORE",
        "IMAGE AFTER",
        "NOTE",
        box=None,
    )
    for cluster in status["clusters"]:
        clusters.add_row(
            cluster["cluster"],
            cluster["ring"],
            _styled(cluster["state"]),
            _styled(cluster["rollback"]) if cluster.get("rollback") else Text(""),
            now_cell(cluster),
            cluster.get("imageBefore") or "",
            cluster.get("imageAfter") or "",
            note(cluster),
        )
    return RenderGroup(header, *lines, Text(""), waves, Text(""), clusters)


def standing(status: dict[str, Any]) -> list[Text]:
    """The lines under the header: where the rollout stands (ring and wave from 1), why, what
    comes next and when, its ETA, and how to give the approval it waits for. A status without
    ``progress`` shows what it waits for, or its stored reason."""
    progress = status.get("progress")
    waiting = status.get("waiting")
    if not progress:
        if waiting:
            return [Text(waiting["message"], style="magenta")]
        return [Text(status.get("reason") or "", style="dim")]
    lines: list[Text] = []
    at = status.get("position")
    if at:
        lines.append(
            Text(
                f"ring {at['ringNumber']} of {at['rings']} ({at['ring']}), "
                f"wave {at['wave']} of {at['waves']}"
            )
        )
    lines.append(Text(progress["reason"], style="magenta" if waiting else ""))
    upcoming = progress.get("next")
    if upcoming:
        left = upcoming.get("inSeconds")
        when = f" in {duration(left)}" if left is not None else ""
        if upcoming.get("at") and left is not None and left <= 0:
            when = " (due now)"
        lines.append(Text(f"next: {upcoming['event']}{when}"))
    lines.extend(_eta(status, progress))
    approval = progress.get("approval")
    refused = (status.get("actions") or {}).get("approve") or {}
    if approval and refused.get("code") == "cluster_regressed":
        lines.append(Text(f"approval refused now: {refused.get('why')}", style="red"))
    elif approval:
        # the API lists who may approve; embedded, on the database here, no role is checked
        names = approval.get("approvers")
        where = "" if names is not None else "; embedded, on the database here, no role is checked"
        lines.append(
            Text(
                f"approve with: driftwave rollout approve {status['id']} --ring "
                f"{approval['ring']} (it needs {approval['requires']}{where})",
                style="magenta",
            )
        )
        if names is not None:
            lines.append(Text(f"may approve: {', '.join(names) or 'no token'}"))
    return lines


def _eta(status: dict[str, Any], progress: dict[str, Any]) -> list[Text]:
    basis = progress.get("etaBasis") or ""
    if progress.get("eta") is None:
        ended = status.get("state") in TERMINAL
        return [] if ended else [Text(f"ETA: none ({basis})", style="dim")]
    at = datetime.fromisoformat(progress["eta"].replace("Z", "+00:00")).astimezone(UTC)
    left = float(progress.get("etaSeconds") or 0.0)
    shown = f"{at:%H:%M} UTC" if left < 86_400 else f"{at:%Y-%m-%d %H:%M} UTC"
    how, _, excludes = basis.partition("excludes ")
    note = f"; excludes {excludes}" if excludes else ""
    return [
        Text(f"ETA {shown} (in {duration(left)}{note})"),
        Text(f"estimated from: {how.rstrip('; ')}", style="dim"),
    ]


def duration(seconds: float) -> str:
    """Seconds as people read them: ``45s``, ``6m52s``, ``1h12m``, ``2d3h``."""
    return span(timedelta(seconds=seconds), seconds_too=True)


def note(cluster: dict[str, Any]) -> Text:
    """A cluster's step note: its error (red when the step failed, else a yellow warning), or
    what it waits for."""
    error = cluster.get("error")
    if error:
        failed = STATE_STYLE.get(cluster.get("state") or "") == "red"
        text = error if len(error) <= 120 else error[:119] + "…"
        return Text(text, style="red") if failed else Text(f"warning: {text}", style="yellow")
    waiting = cluster.get("waiting")
    return Text(waiting["message"], style="magenta") if waiting else Text("")


def _time(value: str | None) -> str:
    return value[11:19] if value else ""
