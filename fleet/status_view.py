"""Rendering a rollout's status for a terminal (rich): the header, each ring's waves with their
gate, and each cluster's step. Used by ``driftwave rollout status`` (also with ``--watch``) and
the demo's live view.

What the rollout waits for replaces its stored reason under the header ("waiting for ... (in
3h12m)"); each cluster's NOTE is what its step waits for, or its error: in red when the step
failed, else as a warning in yellow (an agent retried while the step keeps its state)."""

from __future__ import annotations

from typing import Any

from rich.console import Group as RenderGroup
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

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


def _progress(cluster: dict[str, Any]) -> str:
    progress = cluster.get("progress") or {}
    nodes = progress.get("nodes")
    on_target = progress.get("onTarget")
    if nodes is None or on_target is None:
        return ""
    return f"{on_target}/{nodes} on target"


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
    waiting = status.get("waiting")
    reason = (
        Text(waiting["message"], style="magenta")
        if waiting
        else Text(status.get("reason") or "", style="dim")
    )
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
        "PROGRESS",
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
            _progress(cluster),
            cluster.get("imageBefore") or "",
            cluster.get("imageAfter") or "",
            note(cluster),
        )
    return RenderGroup(header, reason, Text(""), waves, Text(""), clusters)


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
