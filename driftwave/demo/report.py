"""The demo's self-contained HTML report (no scripts, no network): the rollout; nodes per image
as stacked areas over the rollout (the fleet, then ring by ring) and the waves on the same time
axis; cost per cluster where it changed; each wave with its gate checks; each cluster; the
audit trail as a table linking to the trace spans it names."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from driftwave.demo import plots
from driftwave.demo.plots import Sample, TimeAxis
from driftwave.demo.report_audit import audit_table, load_spans, span_table
from driftwave.demo.report_series import (
    by_name,
    combine,
    image_order,
    since,
    span,
    until,
    wave_bars,
)
from driftwave.demo.summary import duration

STYLE = (
    "body{font-family:sans-serif;margin:2em;color:#1f2328;max-width:1200px}"
    "h2{margin-top:1.6em;border-bottom:1px solid #d0d7de;padding-bottom:.2em}"
    "table{border-collapse:collapse;margin:1em 0}"
    "td,th{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top}"
    "th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums}"
    "td.changes{font-family:monospace;font-size:12px}tr.total td{font-weight:bold}"
    ".failed,.halted,.rollback-failed{color:#cf222e}"
    ".converged,.succeeded,.passed{color:#1a7f37}.rolled-back{color:#9a6700}"
    ".untouched{color:#57606a}svg.chart{display:block;margin:.5em 0}"
)
COST_DIGITS = 4
"""Costs per hour are compared at the agents' precision (USD, 4 decimals)."""


def _charts(result: dict[str, Any], samples: Mapping[str, list[Sample]]) -> list[str]:
    """The fleet's nodes per image, the waves, then each ring's nodes per image: one time
    axis; the images counted by release (the AMIs of one release in several regions are one
    area)."""
    axis = TimeAxis(span(result, dict(samples)))
    ids: dict[str, str] = result.get("images") or {}
    named = by_name(dict(samples), ids)
    clusters = [c["name"] for c in result["clusters"]]
    fleet = until(combine(named, clusters), axis.span)
    order = image_order(fleet)
    amis = {n: ", ".join(sorted(i for i, name in ids.items() if name == n)) for n in order}
    keys = {n: a for n, a in amis.items() if a}
    first = set(fleet[0][1]) if fleet else set()
    for image in order:
        if image not in keys and image not in first:
            keys[image] = f"appeared during the rollout of {result['rollout']['targetImage']}"
    parts = [
        "<h2>Nodes per image over the rollout</h2>",
        "<p>Nodes per image, stacked (the image before the rollout in grey, the new one in "
        f"colour), summed over the fleet's {_clusters(len(clusters))}, then ring by ring; the "
        "waves share the time axis.</p>",
        plots.stacked_areas("Whole fleet: nodes per image", fleet, order, axis, keys, 240),
        plots.wave_gantt(wave_bars(result), axis),
    ]
    for ring in result["rings"]:
        members = [c for wave in ring["waves"] for c in wave["clusters"]]
        series = until(combine(named, members), axis.span)
        title = f"Ring {ring['name']} ({_clusters(len(members))}): nodes per image"
        parts.append(plots.stacked_areas(title, series, order, axis, keys, 150, legend=False))
    return parts


def _clusters(count: int) -> str:
    return f"{count} cluster" if count == 1 else f"{count} clusters"


def cost_section(clusters: Sequence[Mapping[str, Any]]) -> str:
    """Cost per hour of each cluster whose cost changed (before, after, change in USD and %),
    and the fleet's total; or one line saying it did not change."""
    before = sum(float(c["costBefore"]) for c in clusters)
    after = sum(float(c["costAfter"]) for c in clusters)
    changed = [
        c
        for c in clusters
        if round(float(c["costBefore"]), COST_DIGITS) != round(float(c["costAfter"]), COST_DIGITS)
    ]
    if not changed:
        return (
            f"<p class='cost-unchanged'>Cost per hour did not change on any of the "
            f"{len(clusters)} clusters (fleet total ${before:,.2f}/h).</p>"
        )
    rows = [
        "<table class='cost'><thead><tr><th>Cluster</th><th>Before ($/h)</th>"
        "<th>After ($/h)</th><th>Change ($/h)</th><th>Change (%)</th></tr></thead><tbody>"
    ]
    for c in changed:
        rows.append(
            _cost_row(html.escape(c["name"]), float(c["costBefore"]), float(c["costAfter"]))
        )
    rows.append(_cost_row(f"fleet total ({len(clusters)} clusters)", before, after, "total"))
    unchanged = len(clusters) - len(changed)
    rows.append("</tbody></table>")
    if unchanged:
        others = "other cluster's" if unchanged == 1 else f"other {unchanged} clusters'"
        rows.append(f"<p>The {others} cost per hour did not change.</p>")
    return "".join(rows)


def _cost_row(name: str, before: float, after: float, css: str = "changed") -> str:
    delta = after - before
    percent = f"{delta / before * 100:+.1f} %" if before else "new"
    return (
        f"<tr class='{css}'><td>{name}</td><td class='num'>{before:,.4f}</td>"
        f"<td class='num'>{after:,.4f}</td><td class='num'>{delta:+,.4f}</td>"
        f"<td class='num'>{percent}</td></tr>"
    )


def _waves_table(result: dict[str, Any]) -> list[str]:
    e = html.escape
    parts = [
        "<h2>Waves</h2><table class='waves'><thead><tr><th>Ring</th><th>Wave</th>"
        "<th>Clusters</th><th>State</th><th>Started (UTC)</th><th>Finished (UTC)</th>"
        "<th>Gate checks</th>"
        "</tr></thead><tbody>"
    ]
    for ring in result["rings"]:
        for wave in ring["waves"]:
            checks = "<br>".join(
                f"{'✓' if c.get('passed') else '✗'} {e(c['name'])}: {e(str(c.get('message', '')))}"
                for c in wave["gate"]["checks"]
            )
            parts.append(
                f"<tr><td>{e(ring['name'])}</td><td>{wave['index']}</td>"
                f"<td>{e(', '.join(wave['clusters']))}</td>"
                f"<td class='{e(wave['state'])}'>{e(wave['state'])}</td>"
                f"<td>{_clock(wave['startedAt'], 'not started')}</td>"
                f"<td>{_clock(wave['finishedAt'], '')}</td><td>{checks}</td></tr>"
            )
    parts.append("</tbody></table>")
    return parts


def _clock(stamp: str | None, otherwise: str) -> str:
    """An RFC 3339 stamp as its time of day (the whole stamp as the cell's tooltip)."""
    if not stamp:
        return html.escape(otherwise)
    return f"<span title='{html.escape(stamp)}'>{html.escape(stamp[11:19])}</span>"


def _clusters_table(result: dict[str, Any]) -> list[str]:
    e = html.escape
    names = result.get("images") or {}

    def image(ami: str | None) -> str:
        return e(f"{ami} ({names[ami]})" if ami in names else (ami or "-"))

    parts = [
        "<h2>Clusters</h2><table class='clusters'><thead><tr><th>Cluster</th><th>Ring</th>"
        "<th>State</th><th>Nodes</th><th>Replaced</th><th>Image before → after</th>"
        "<th>Time</th></tr></thead><tbody>"
    ]
    for c in result["clusters"]:
        same = c["imageBefore"] == c["imageAfter"]
        images = (
            f"{image(c['imageBefore'])} (unchanged)"
            if same
            else f"{image(c['imageBefore'])} → {image(c['imageAfter'])}"
        )
        parts.append(
            f"<tr><td>{e(c['name'])}</td><td>{e(c['ring'])}</td>"
            f"<td class='{e(c['state'])}'>{e(c['state'])}</td><td class='num'>{c['nodes']}</td>"
            f"<td class='num'>{c['nodesReplaced']}</td><td>{images}</td>"
            f"<td class='num'>{e(duration(c.get('seconds')))}</td></tr>"
        )
    parts.append("</tbody></table>")
    return parts


def _trace_link(path: Path, trace_file: str | None) -> str:
    """A link to the trace file, relative when it sits beside the report."""
    if not trace_file:
        return ""
    target = Path(trace_file)
    href = target.name if target.parent == path.parent else target.resolve().as_uri()
    return f" (<a href='{html.escape(href)}'>{html.escape(target.name)}</a>)"


def write_report(
    path: Path,
    result: dict[str, Any],
    audit: list[dict[str, Any]],
    samples: Mapping[str, list[Sample]] | None = None,
) -> Path:
    """Write the self-contained HTML report of the demo's ``result`` (its ``--json``
    summary), its ``audit`` trail and the clusters' ``samples`` (nodes per image over the
    rollout) to ``path``; the trace spans the audit names are read from the result's
    ``traceFile``."""
    e = html.escape
    rollout = result["rollout"]
    trace_file = result.get("traceFile")
    spans = load_spans(
        Path(trace_file) if trace_file else None,
        rollout.get("traceId"),
        {str(a.get("spanId")) for a in audit if a.get("spanId")},
    )
    took = since(rollout.get("startedAt"), rollout.get("finishedAt"))
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>driftwave rollout {e(rollout['id'])}</title><style>{STYLE}</style></head><body>",
        f"<h1>Rollout {e(rollout['id'])}: <span class='{e(rollout['state'])}'>"
        f"{e(rollout['state'])}</span></h1>",
        f"<p>Release {e(rollout['release'])} (target {e(rollout['targetImage'])}): "
        f"{e(rollout['reason'] or '')}.<br>Started {e(rollout['startedAt'] or '-')}, finished "
        f"{e(rollout['finishedAt'] or '-')} ({e(duration(took))}). Trace id "
        f"<code>{e(rollout['traceId'] or '')}</code>{_trace_link(path, trace_file)}.</p>",
        *_charts(result, samples or {}),
        "<h2>Cost per hour</h2>",
        cost_section(result["clusters"]),
        *_waves_table(result),
        *_clusters_table(result),
        "<h2>Audit trail</h2>",
        audit_table(audit, spans),
        "<h2>Trace spans named by the audit</h2>",
        span_table(spans) if spans else "<p>The trace file holds none of the audit's spans.</p>",
        "</body></html>",
    ]
    path.write_text("\n".join(parts), encoding="utf-8")
    return path
