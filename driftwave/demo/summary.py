"""The demo's results: the ``--json`` summary (rollout, rings with waves and gates, clusters)
and the one table per ring / wave / cluster printed at the end (whole names at any width; the
HTML report is :mod:`driftwave.demo.report`)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from driftwave.demo.setup import NEW_RELEASE

STATE_STYLE = {"converged": "green", "rolled-back": "yellow", "failed": "red", "untouched": "dim"}
COLUMNS = ("RING", "WAVE", "CLUSTER", "STATE", "IMAGE BEFORE → AFTER", "NODES", "REPLACED", "TIME")


def cluster_state(step: dict[str, Any]) -> str:
    """converged | rolled-back | failed | untouched, as the demo reports a cluster."""
    if step.get("rollback") == "rolled-back":
        return "rolled-back"
    if step["state"] in ("verified", "converged"):
        return "converged"
    if step["state"] in ("pending", "cancelled", "skipped"):
        return "untouched"
    return "failed"


def _wave(wave: dict[str, Any], soak_seconds: float | None) -> dict[str, Any]:
    gate = wave.get("gate") or {}
    return {
        "index": wave["index"],
        "clusters": wave["clusters"],
        "state": wave["state"],
        "startedAt": wave["startedAt"],
        "finishedAt": wave["finishedAt"],
        "soakUntil": wave.get("soakUntil"),
        "soakSeconds": soak_seconds,
        "gate": {
            "passed": bool(gate.get("passed")),
            "evaluatedAt": gate.get("evaluatedAt"),
            "checks": gate.get("checks", []),
        },
    }


def summary(
    status: dict[str, Any],
    before: dict[str, dict[str, Any]],
    after: dict[str, dict[str, Any]],
    trace_file: Path,
    report: Path,
) -> dict[str, Any]:
    """The ``--json`` summary; ``before``/``after`` are each cluster's agent status."""
    soaks = {r["name"]: r.get("soakSeconds") for r in (status.get("plan") or {}).get("rings", [])}
    rings = [
        {"name": ring["name"], "waves": [_wave(w, soaks.get(ring["name"])) for w in ring["waves"]]}
        for ring in status["rings"]
    ]
    clusters = []
    for step in status["clusters"]:
        name = step["cluster"]
        first = before.get(name, {})
        last = after.get(name, {})
        clusters.append(
            {
                "name": name,
                "ring": step["ring"],
                "imageBefore": _main_image(first),
                "imageAfter": _main_image(last),
                "imagesBefore": sorted(first.get("nodesByImage", {})),
                "imagesAfter": sorted(last.get("nodesByImage", {})),
                "nodes": last.get("nodes", step.get("nodes")),
                "nodesReplaced": step.get("nodesReplaced") or 0,
                "costBefore": float(first.get("costPerHour") or 0.0),
                "costAfter": float(last.get("costPerHour") or 0.0),
                "state": cluster_state(step),
                "step": step["state"],
                "rollback": step.get("rollback"),
                "seconds": _seconds(step.get("startedAt"), step.get("finishedAt")),
            }
        )
    return {
        "rollout": {
            "id": status["id"],
            "state": status["state"],
            "release": status["release"],
            "targetImage": f"al2023@{NEW_RELEASE}",
            "reason": status["reason"],
            "startedAt": status["startedAt"],
            "finishedAt": status["finishedAt"],
            "traceId": status["traceId"],
        },
        "rings": rings,
        "clusters": clusters,
        "images": image_names([*before.values(), *after.values()]),
        "traceFile": str(trace_file),
        "report": str(report),
    }


def image_names(statuses: list[dict[str, Any]]) -> dict[str, str]:
    """Each image some node of ``statuses`` runs, named by the selector terms of the
    EC2NodeClass that resolves to it (``ami-0abc…`` → ``al2023@v20251216``)."""
    names: dict[str, str] = {}
    used = {image for status in statuses for image in status.get("nodesByImage") or {}}
    for status in statuses:
        for nodeclass in status.get("nodeClasses") or []:
            terms = [
                str(t.get("alias") or t.get("name") or t.get("id") or "")
                for t in nodeclass.get("amiSelectorTerms") or []
            ]
            label = ", ".join(t for t in terms if t)
            for image in nodeclass.get("images") or []:
                if label and image in used:
                    names.setdefault(str(image), label)
    return names


def _seconds(start: str | None, end: str | None) -> float | None:
    """Seconds from ``start`` to ``end`` (RFC 3339), or None when either is missing or they
    are out of order (a rolled-back step restarts its clock)."""
    if not start or not end:
        return None
    took = (_time(end) - _time(start)).total_seconds()
    return took if took >= 0 else None


def _time(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _main_image(status: dict[str, Any]) -> str | None:
    """The image most of the cluster's nodes run."""
    by_image = status.get("nodesByImage") or {}
    return max(by_image, key=lambda image: by_image[image]) if by_image else None


def duration(seconds: float | None) -> str:
    """``3.0s``, ``2m05s``, ``1h02m``; ``-`` for None."""
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    return f"{minutes // 60}h{minutes % 60:02d}m"


def summary_rows(result: dict[str, Any]) -> list[tuple[str, ...]]:
    """The summary table's rows (cells as text, in :data:`COLUMNS` order), wave by wave."""
    by_name = {c["name"]: c for c in result["clusters"]}
    rows: list[tuple[str, ...]] = []
    for ring in result["rings"]:
        for wave in ring["waves"]:
            for name in wave["clusters"]:
                c = by_name[name]
                before, after = c["imageBefore"] or "-", c["imageAfter"] or "-"
                images = f"{before} (unchanged)" if before == after else f"{before} → {after}"
                rows.append(
                    (
                        ring["name"],
                        str(wave["index"]),
                        name,
                        c["state"],
                        images,
                        str(c["nodes"] if c["nodes"] is not None else "-"),
                        str(c["nodesReplaced"]),
                        duration(c.get("seconds")),
                    )
                )
    return rows


def summary_lines(result: dict[str, Any]) -> list[Text]:
    """The summary table as lines of text: columns padded to their widest cell, every cell
    whole (a narrow terminal or a pipe wraps or scrolls a line; it never cuts a name)."""
    rows = summary_rows(result)
    widths = [max(len(cell) for cell in column) for column in zip(COLUMNS, *rows, strict=False)]
    numeric = {"WAVE", "NODES", "REPLACED", "TIME"}

    def line(cells: tuple[str, ...], header: bool = False) -> Text:
        text = Text(style="bold" if header else "")
        for index, (column, cell, width) in enumerate(zip(COLUMNS, cells, widths, strict=True)):
            padded = cell.rjust(width) if column in numeric else cell.ljust(width)
            if index == len(COLUMNS) - 1:
                padded = padded.rstrip()
            style = "" if header or column != "STATE" else STATE_STYLE.get(cell, "")
            text.append(padded, style=style)
            if index < len(COLUMNS) - 1:
                text.append("  ")
        return text

    return [line(COLUMNS, header=True), *(line(row) for row in rows)]


def failed_gates(result: dict[str, Any]) -> list[str]:
    """One line per failed check of each wave whose gate failed (``gate of canary wave 1
    failed: steps: canary-1: drift halted ...``)."""
    lines = []
    for ring in result["rings"]:
        for wave in ring["waves"]:
            gate = wave["gate"]
            if gate["passed"] or not gate["checks"]:
                continue
            for check in gate["checks"]:
                if check.get("passed") is False:
                    lines.append(
                        f"gate of {ring['name']} wave {wave['index']} failed: "
                        f"{check['name']}: {check.get('message', '')}"
                    )
    return lines


def print_summary(console: Console, result: dict[str, Any]) -> None:
    """The one summary table (ring / wave / cluster / state / images / nodes / replaced /
    time), the rollout's outcome, the images' names, then where the report and trace are.
    Nothing is cut to the console's width."""
    rollout = result["rollout"]

    def out(text: str | Text, style: str = "") -> None:
        console.print(text, style=style, soft_wrap=True, markup=False, highlight=False)

    out(Text.assemble(f"rollout {rollout['id']}: ", (rollout["state"], _style(rollout))))
    for line in summary_lines(result):
        out(line)
    out(rollout["reason"] or "", style="dim")
    for failure in failed_gates(result):
        out(failure, style="red")
    simulation = result.get("simulation")
    if simulation is not None:
        out(simulation["note"], style="yellow" if simulation["busy"] else "dim")
    for image, name in sorted(result.get("images", {}).items()):
        out(f"{image} = {name}", style="dim")
    out(f"report: {result['report']}")
    out(f"trace:  {result['traceFile']} (trace id {rollout['traceId']})")


def _style(rollout: dict[str, Any]) -> str:
    return {"succeeded": "green", "rolled-back": "yellow"}.get(rollout["state"], "red")


def unexpected(result: dict[str, Any], faulty: bool) -> str | None:
    """Why the demo's rollout did not end as the demo promises (None: it did). A good image
    ends ``succeeded``; a faulty one ends ``rolled-back`` with only the canary touched."""
    state = result["rollout"]["state"]
    wanted = "rolled-back" if faulty else "succeeded"
    image = "a faulty image" if faulty else "a good image"
    if state != wanted:
        return f"the rollout of {image} ended {state}, not {wanted}: {result['rollout']['reason']}"
    if faulty:
        touched = sorted(
            c["name"]
            for c in result["clusters"]
            if c["ring"] != "canary" and c["state"] != "untouched"
        )
        if touched:
            return f"the faulty image reached clusters beyond the canary: {', '.join(touched)}"
    return None
