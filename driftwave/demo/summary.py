"""The demo's results: the ``--json`` summary (rollout, rings with waves and gates, clusters),
the terminal table per ring / wave / cluster, and the self-contained HTML report."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from driftwave.demo import plots
from driftwave.demo.plots import Sample
from driftwave.demo.setup import NEW_RELEASE


def cluster_state(step: dict[str, Any]) -> str:
    """converged | rolled-back | failed | untouched, as the demo reports a cluster."""
    if step.get("rollback") == "rolled-back":
        return "rolled-back"
    if step["state"] in ("verified", "converged"):
        return "converged"
    if step["state"] in ("pending", "cancelled", "skipped"):
        return "untouched"
    return "failed"


def summary(
    status: dict[str, Any],
    before: dict[str, dict[str, Any]],
    after: dict[str, dict[str, Any]],
    trace_file: Path,
    report: Path,
) -> dict[str, Any]:
    """The ``--json`` summary; ``before``/``after`` are each cluster's agent status."""
    rings = [
        {
            "name": ring["name"],
            "waves": [
                {
                    "index": wave["index"],
                    "clusters": wave["clusters"],
                    "state": wave["state"],
                    "startedAt": wave["startedAt"],
                    "finishedAt": wave["finishedAt"],
                    "gate": {
                        "passed": bool(wave["gate"] and wave["gate"]["passed"]),
                        "checks": (wave["gate"] or {}).get("checks", []),
                    },
                }
                for wave in ring["waves"]
            ],
        }
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
        "traceFile": str(trace_file),
        "report": str(report),
    }


def _main_image(status: dict[str, Any]) -> str | None:
    """The image most of the cluster's nodes run."""
    by_image = status.get("nodesByImage") or {}
    return max(by_image, key=lambda image: by_image[image]) if by_image else None


def print_summary(console: Console, result: dict[str, Any]) -> None:
    """The table per ring / wave / cluster, then where the report and trace are."""
    rollout = result["rollout"]
    table = Table(
        "RING",
        "WAVE",
        "CLUSTER",
        "STATE",
        "NODES",
        "REPLACED",
        "IMAGE BEFORE",
        "IMAGE AFTER",
        "GATE",
        title=f"rollout {rollout['id']}: {rollout['state']}",
        box=None,
    )
    by_name = {c["name"]: c for c in result["clusters"]}
    for ring in result["rings"]:
        for wave in ring["waves"]:
            gate = (
                "passed"
                if wave["gate"]["passed"]
                else ("failed" if wave["gate"]["checks"] else "-")
            )
            for name in wave["clusters"]:
                c = by_name[name]
                table.add_row(
                    ring["name"],
                    str(wave["index"]),
                    name,
                    c["state"],
                    str(c["nodes"]),
                    str(c["nodesReplaced"]),
                    c["imageBefore"] or "-",
                    c["imageAfter"] or "-",
                    gate,
                )
    console.print(table)
    console.print(rollout["reason"], style="dim")
    console.print(f"report: {result['report']}")
    console.print(f"trace:  {result['traceFile']} (trace id {rollout['traceId']})")


def _plots(result: dict[str, Any], samples: dict[str, list[Sample]]) -> list[str]:
    """The report's plot section."""
    parts = ["<h2>Waves over time</h2>", plots.wave_timeline(result["rings"])]
    parts.append("<h2>Nodes per image over time</h2><div class='plots'>")
    for cluster in result["clusters"]:
        series = samples.get(cluster["name"], [])
        images: list[str] = []
        for _, counts in series:
            images += [image for image in counts if image not in images]
        parts.append(plots.nodes_per_image(cluster["name"], series, images))
    parts.append("</div><h2>Cost per hour before and after</h2>")
    costs = [(c["name"], c["costBefore"], c["costAfter"]) for c in result["clusters"]]
    parts.append(plots.cost_before_after(costs))
    return parts


def write_report(
    path: Path,
    result: dict[str, Any],
    audit: list[dict[str, Any]],
    samples: dict[str, list[Sample]] | None = None,
) -> Path:
    """A self-contained HTML report: the rollout, its plots (nodes per image over time per
    cluster, the waves over time, cost per hour before and after), each wave with its gate
    checks, each cluster, and the audit trail with trace ids (no scripts, no network)."""
    e = html.escape
    rollout = result["rollout"]
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>driftwave rollout {e(rollout['id'])}</title>",
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;"
        "margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}"
        ".failed,.halted{color:#b00}.converged,.succeeded,.passed{color:#070}"
        ".rolled-back{color:#a60}</style></head><body>",
        f"<h1>Rollout {e(rollout['id'])}: <span class='{e(rollout['state'])}'>"
        f"{e(rollout['state'])}</span></h1>",
        f"<p>Release {e(rollout['release'])} (target {e(rollout['targetImage'])}); "
        f"{e(rollout['reason'] or '')}. Trace id <code>{e(rollout['traceId'] or '')}</code>.</p>",
        *_plots(result, samples or {}),
        "<h2>Waves</h2><table><tr><th>Ring</th><th>Wave</th><th>Clusters</th><th>Started</th>"
        "<th>Finished</th><th>Gate</th></tr>",
    ]
    for ring in result["rings"]:
        for wave in ring["waves"]:
            checks = "<br>".join(
                f"{'✔' if c.get('passed') else '✘'} {e(c['name'])}: {e(str(c.get('message', '')))}"
                for c in wave["gate"]["checks"]
            )
            parts.append(
                f"<tr><td>{e(ring['name'])}</td><td>{wave['index']}</td>"
                f"<td>{e(', '.join(wave['clusters']))}</td><td>{e(wave['startedAt'] or '')}</td>"
                f"<td>{e(wave['finishedAt'] or '')}</td><td>{checks}</td></tr>"
            )
    parts.append(
        "</table><h2>Clusters</h2><table><tr><th>Cluster</th><th>Ring</th><th>State</th>"
        "<th>Nodes</th><th>Replaced</th><th>Image before</th><th>Image after</th></tr>"
    )
    for c in result["clusters"]:
        parts.append(
            f"<tr><td>{e(c['name'])}</td><td>{e(c['ring'])}</td>"
            f"<td class='{e(c['state'])}'>{e(c['state'])}</td><td>{c['nodes']}</td>"
            f"<td>{c['nodesReplaced']}</td><td>{e(c['imageBefore'] or '')}</td>"
            f"<td>{e(c['imageAfter'] or '')}</td></tr>"
        )
    parts.append(
        "</table><h2>Audit trail</h2><table><tr><th>Time</th><th>Actor</th><th>Action</th>"
        "<th>Object</th><th>After</th><th>Trace / span</th></tr>"
    )
    for row in audit:
        parts.append(
            f"<tr><td>{e(row['at'])}</td><td>{e(row['actor'])}</td><td>{e(row['action'])}</td>"
            f"<td>{e(row['object'])}</td><td>{e(str(row['after'] or ''))[:160]}</td>"
            f"<td><code>{e(row['traceId'] or '')}/{e(row['spanId'] or '')}</code></td></tr>"
        )
    parts.append("</table></body></html>")
    path.write_text("\n".join(parts), encoding="utf-8")
    return path
