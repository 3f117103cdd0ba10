"""The demo report's plots as inline SVG (no scripts, no network): nodes per image over time
per cluster, a wave timeline per ring, and each cluster's cost per hour before and after.

Each function takes plain data and returns one ``<svg>`` element; the report embeds them.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from datetime import datetime
from typing import Any

PALETTE = ("#8c959f", "#0969da", "#1a7f37", "#cf222e", "#9a6700", "#8250df")
Sample = tuple[float, dict[str, int]]
"""Seconds since the rollout started, and the cluster's nodes per image then."""


def _svg(width: int, height: int, body: list[str], title: str) -> str:
    label = html.escape(title)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{label}">'
        f"<title>{label}</title>{''.join(body)}</svg>"
    )


def _text(x: float, y: float, text: str, size: int = 11, anchor: str = "start") -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
        f'font-family="sans-serif">{html.escape(text)}</text>'
    )


def nodes_per_image(cluster: str, samples: Sequence[Sample], images: Sequence[str]) -> str:
    """Lines of each image's node count over the rollout, for one cluster."""
    width, height, left, bottom, top = 360, 170, 36, 28, 22
    body = [_text(left, 14, cluster, 12)]
    end = max((t for t, _ in samples), default=1.0) or 1.0
    most = max((sum(counts.values()) for _, counts in samples), default=1) or 1
    plot_w, plot_h = width - left - 10, height - top - bottom
    body.append(
        f'<line x1="{left}" y1="{height - bottom}" x2="{width - 10}" y2="{height - bottom}" '
        'stroke="#999"/>'
    )
    body.append(_text(left - 4, top + 8, str(most), 10, "end"))
    body.append(_text(left - 4, height - bottom, "0", 10, "end"))
    body.append(_text(width - 10, height - 8, f"{end / 60:.1f} min", 10, "end"))
    for index, image in enumerate(images):
        color = PALETTE[index % len(PALETTE)]
        points = " ".join(
            f"{left + plot_w * t / end:.1f},{top + plot_h * (1 - counts.get(image, 0) / most):.1f}"
            for t, counts in samples
        )
        if points:
            body.append(
                f'<polyline data-image="{html.escape(image)}" points="{points}" fill="none" '
                f'stroke="{color}" stroke-width="2"/>'
            )
        body.append(
            f'<rect x="{left + 4 + index * 170}" y="{height - 12}" width="10" height="4" '
            f'fill="{color}"/>'
        )
        body.append(_text(left + 18 + index * 170, height - 6, image[-17:], 9))
    return _svg(width, height, body, f"{cluster}: nodes per image over time")


def wave_timeline(rings: Sequence[dict[str, Any]]) -> str:
    """One bar per wave from its start to its end, a row per wave, grouped by ring."""
    waves = [
        (ring["name"], wave) for ring in rings for wave in ring["waves"] if wave.get("startedAt")
    ]
    starts = [_time(w["startedAt"]) for _, w in waves]
    ends = [_time(w.get("finishedAt") or w["startedAt"]) for _, w in waves]
    origin = min(starts) if starts else None
    span = max(((e - origin).total_seconds() for e in ends), default=1.0) if origin else 1.0
    span = span or 1.0
    row, left, width = 22, 130, 720
    height = 30 + row * max(len(waves), 1)
    body = []
    for index, ((ring, wave), start, end) in enumerate(zip(waves, starts, ends, strict=True)):
        assert origin is not None
        x0 = left + (width - left - 10) * (start - origin).total_seconds() / span
        x1 = left + (width - left - 10) * (end - origin).total_seconds() / span
        y = 10 + index * row
        color = {"passed": "#1a7f37", "failed": "#cf222e"}.get(wave["state"], "#0969da")
        body.append(_text(4, y + 13, f"{ring} · wave {wave['index']}"))
        body.append(
            f'<rect class="wave" x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 2):.1f}" '
            f'height="{row - 6}" fill="{color}" rx="3"><title>{html.escape(wave["state"])}: '
            f"{html.escape(', '.join(wave['clusters']))}</title></rect>"
        )
    body.append(_text(width - 10, height - 4, f"{span / 60:.1f} min", 10, "end"))
    return _svg(width, height, body, "waves over time")


def cost_before_after(costs: Sequence[tuple[str, float, float]]) -> str:
    """Each cluster's cost per hour before (grey) and after (blue) the rollout."""
    width, left, row = 560, 90, 20
    height = 30 + row * max(len(costs), 1)
    most = max((max(b, a) for _, b, a in costs), default=1.0) or 1.0
    body = []
    for index, (cluster, before, after) in enumerate(costs):
        y = 8 + index * row
        body.append(_text(4, y + 12, cluster))
        for offset, value, color in ((0, before, "#8c959f"), (8, after, "#0969da")):
            w = (width - left - 90) * value / most
            body.append(
                f'<rect class="cost" x="{left}" y="{y + offset}" width="{w:.1f}" height="7" '
                f'fill="{color}"><title>${value:.2f}/h</title></rect>'
            )
        body.append(_text(width - 4, y + 12, f"${before:.2f} → ${after:.2f}/h", 10, "end"))
    return _svg(width, height, body, "cost per hour before and after")


def _time(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))
