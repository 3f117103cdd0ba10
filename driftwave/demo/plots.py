"""The demo report's charts as inline SVG (no scripts, no network), on one time axis (seconds or
minutes since the rollout started) so they line up on the page: nodes per image as stacked
areas (the old image shrinking as the new one grows) and the waves as a Gantt chart (one bar per
wave coloured by outcome, its soak hatched, its gate's verdict marked where it was evaluated).

Each chart function takes plain data and returns one ``<svg>`` element.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

Sample = tuple[float, dict[str, int]]
"""Seconds since the rollout started, and the nodes per image then."""

WIDTH, LEFT, RIGHT = 960, 170, 24
"""Every chart's width and margins, so their time axes line up."""
OLD_COLOURS = ("#8c959f", "#57606a", "#afb8c1")
NEW_COLOURS = ("#0969da", "#1a7f37", "#54aeff", "#4ac26b", "#8250df")
OUTCOME_COLOURS = {
    "passed": "#1a7f37",
    "failed": "#cf222e",
    "cancelled": "#8c959f",
    "pending": "#d0d7de",
}
RUNNING_COLOUR = "#0969da"
ROLLBACK_COLOUR = "#bf8700"
ROLLBACK_FAILED_COLOUR = "#82071e"


def _text(
    x: float, y: float, text: str, size: int = 11, anchor: str = "start", **attrs: str
) -> str:
    extra = "".join(f' {k.replace("_", "-")}="{html.escape(v)}"' for k, v in attrs.items())
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
        f'font-family="sans-serif"{extra}>{html.escape(text)}</text>'
    )


def _svg(height: int, body: list[str], title: str, css_class: str) -> str:
    label = html.escape(title)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="{css_class}" width="{WIDTH}" '
        f'height="{height}" viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{label}">'
        f"<title>{label}</title>{''.join(body)}</svg>"
    )


def nice_step(span: float, ticks: int) -> float:
    """A round step (1, 2 or 5 times a power of ten; 15, 30 in seconds and minutes) giving
    about ``ticks`` intervals over ``span``."""
    raw = max(span, 1e-9) / max(ticks, 1)
    power = 10 ** math.floor(math.log10(raw))
    for factor in (1, 1.5, 2, 3, 5, 10):
        if factor * power >= raw:
            return float(factor * power)
    return float(10 * power)


@dataclass(frozen=True)
class TimeAxis:
    """Seconds since the rollout started, mapped onto the charts' plot width."""

    span: float

    @property
    def minutes(self) -> bool:
        """Whether the axis reads in minutes (spans over three minutes) rather than seconds."""
        return self.span > 180

    def x(self, seconds: float) -> float:
        """The x coordinate of ``seconds`` since the start (clamped to the axis)."""
        t = min(max(seconds, 0.0), self.span)
        return LEFT + (WIDTH - LEFT - RIGHT) * t / (self.span or 1.0)

    def draw(self, y: float, grid_top: float | None = None) -> list[str]:
        """The axis line at ``y``, its ticks and labels, and the axis title under them
        (with ``grid_top``, faint grid lines up to it)."""
        unit = 60.0 if self.minutes else 1.0
        step = nice_step(self.span / unit, 8) * unit
        body = [f'<line x1="{LEFT}" y1="{y}" x2="{WIDTH - RIGHT}" y2="{y}" stroke="#57606a"/>']
        count = int(self.span / step + 1e-9)
        for n in range(count + 1):
            x = self.x(n * step)
            if grid_top is not None:
                body.append(
                    f'<line x1="{x:.1f}" y1="{grid_top}" x2="{x:.1f}" y2="{y}" stroke="#eaeef2"/>'
                )
            body.append(f'<line x1="{x:.1f}" y1="{y}" x2="{x:.1f}" y2="{y + 4}" stroke="#57606a"/>')
            body.append(_text(x, y + 15, f"{n * step / unit:g}", 10, "middle", css_class="tick"))
        unit_name = "minutes" if self.minutes else "seconds"
        title = f"time since the rollout started ({unit_name})"
        body.append(_text((LEFT + WIDTH - RIGHT) / 2, y + 30, title, 11, "middle"))
        return body


def _colours(images: Sequence[str], old: set[str]) -> dict[str, str]:
    colours: dict[str, str] = {}
    olds = [i for i in images if i in old]
    news = [i for i in images if i not in old]
    for index, image in enumerate(olds):
        colours[image] = OLD_COLOURS[index % len(OLD_COLOURS)]
    for index, image in enumerate(news):
        colours[image] = NEW_COLOURS[index % len(NEW_COLOURS)]
    return colours


def stacked_areas(
    title: str,
    series: Sequence[Sample],
    images: Sequence[str],
    axis: TimeAxis,
    names: dict[str, str] | None = None,
    height: int = 200,
    legend: bool = True,
) -> str:
    """Nodes per image over time, one area per image stacked in ``images``' order (the first
    at the bottom; the images of the first sample in greys, later ones in colour), with a
    nodes axis, the time axis and (with ``legend``) a key describing each image (``names``:
    image → what it is, e.g. its AMI ids)."""
    names = names or {}
    top, plot_bottom = 26, height - (70 if legend else 46)
    most = max((sum(c.get(i, 0) for i in images) for _, c in series), default=0) or 1
    step = max(1.0, nice_step(most, 4))
    peak = math.ceil(most / step) * step

    def y(nodes: float) -> float:
        return plot_bottom - (plot_bottom - top) * nodes / peak

    body = [_text(4, 16, title, 13, font_weight="bold")]
    body += axis.draw(plot_bottom, grid_top=top)
    for n in range(int(peak / step) + 1):
        body.append(_text(LEFT - 6, y(n * step) + 4, f"{n * step:g}", 10, "end", css_class="tick"))
        body.append(
            f'<line x1="{LEFT}" y1="{y(n * step):.1f}" x2="{WIDTH - RIGHT}" '
            f'y2="{y(n * step):.1f}" stroke="#eaeef2"/>'
        )
    middle = (top + plot_bottom) / 2
    body.append(
        f'<text x="{LEFT - 44}" y="{middle:.1f}" font-size="11" text-anchor="middle" '
        f'font-family="sans-serif" transform="rotate(-90 {LEFT - 44} {middle:.1f})">nodes</text>'
    )
    colours = _colours(images, set(series[0][1]) if series else set())
    below = [0.0] * len(series)
    for image in images:
        above = [b + counts.get(image, 0) for b, (_, counts) in zip(below, series, strict=True)]
        if series:
            upper = [f"{axis.x(t):.1f},{y(v):.1f}" for (t, _), v in zip(series, above, strict=True)]
            lower = [f"{axis.x(t):.1f},{y(v):.1f}" for (t, _), v in zip(series, below, strict=True)]
            label = f"{image} ({names[image]})" if image in names else image
            body.append(
                f'<path class="area" data-image="{html.escape(image)}" '
                f'd="M {" L ".join(upper)} L {" L ".join(reversed(lower))} Z" '
                f'fill="{colours[image]}" fill-opacity="0.85" stroke="{colours[image]}">'
                f"<title>{html.escape(label)}</title></path>"
            )
        below = above
    if not series:
        body.append(_text(WIDTH / 2, middle, "no samples", 12, "middle"))
    x = float(LEFT)
    for image in images if legend else ():
        label = f"{image} ({names[image]})" if image in names else image or "(no image)"
        body.append(
            f'<rect class="legend" x="{x:.1f}" y="{height - 16}" width="12" height="10" '
            f'fill="{colours[image]}"/>'
        )
        body.append(_text(x + 16, height - 7, label, 10))
        x += 24 + 6 * len(label)
    return _svg(height, body, title, "chart nodes")


@dataclass(frozen=True)
class WaveBar:
    """One wave on the time axis (every time in seconds since the rollout started)."""

    label: str
    clusters: Sequence[str]
    state: str
    start: float | None
    end: float | None
    soak: tuple[float, float] | None = None
    gate_at: float | None = None
    gate_passed: bool | None = None
    rollback_end: float | None = None
    rollback_failed: bool = False


def wave_gantt(bars: Sequence[WaveBar], axis: TimeAxis) -> str:
    """One row per wave: a bar from its start to its end coloured by outcome (passed green,
    failed red, running blue), its soak hatched, a rollback after it (amber; dark red when it
    failed), and its gate's
    verdict (✓ passed, ✗ failed) marked at the time the gate was evaluated. A wave that never
    started says so in its row."""
    row, top = 28, 30
    height = top + row * max(len(bars), 1) + 86
    body = [
        '<defs><pattern id="soak-hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><rect width="6" height="6" fill="#ffffff" '
        'fill-opacity="0.35"/><line x1="0" y1="0" x2="0" y2="6" stroke="#ffffff" '
        'stroke-width="3"/></pattern></defs>',
        _text(4, 16, "Waves over time", 13, font_weight="bold"),
    ]
    bottom = top + row * max(len(bars), 1)
    body += axis.draw(bottom + 4, grid_top=top - 4)
    for index, bar in enumerate(bars):
        y = top + index * row
        body.append(_text(LEFT - 8, y + 15, bar.label, 11, "end"))
        tip = html.escape(f"{bar.label}: {bar.state} ({', '.join(bar.clusters)})")
        if bar.start is None:
            body.append(_text(LEFT + 6, y + 15, "not started", 10, fill="#57606a"))
            continue
        x0, x1 = axis.x(bar.start), axis.x(bar.end if bar.end is not None else axis.span)
        colour = OUTCOME_COLOURS.get(bar.state, RUNNING_COLOUR)
        body.append(
            f'<rect class="wave" data-state="{html.escape(bar.state)}" x="{x0:.1f}" y="{y + 4}" '
            f'width="{max(x1 - x0, 2):.1f}" height="{row - 10}" fill="{colour}" rx="3">'
            f"<title>{tip}</title></rect>"
        )
        if bar.soak is not None:
            s0, s1 = axis.x(bar.soak[0]), axis.x(bar.soak[1])
            body.append(
                f'<rect class="soak" x="{s0:.1f}" y="{y + 4}" width="{max(s1 - s0, 1):.1f}" '
                f'height="{row - 10}" fill="url(#soak-hatch)"><title>soak '
                f"{bar.soak[1] - bar.soak[0]:.1f} s</title></rect>"
            )
        if bar.rollback_end is not None and bar.end is not None:
            r0, r1 = axis.x(bar.end), axis.x(bar.rollback_end)
            fill, what = (
                (ROLLBACK_FAILED_COLOUR, "rollback failed")
                if bar.rollback_failed
                else (ROLLBACK_COLOUR, "rolled back")
            )
            body.append(
                f'<rect class="rollback" x="{r0:.1f}" y="{y + 8}" width="{max(r1 - r0, 2):.1f}" '
                f'height="{row - 18}" fill="{fill}"><title>{what}</title></rect>'
            )
        if bar.gate_at is not None and bar.gate_passed is not None:
            gx, verdict = axis.x(bar.gate_at), "passed" if bar.gate_passed else "failed"
            body.append(
                f'<g class="gate {verdict}"><circle cx="{gx:.1f}" cy="{y + row / 2 - 1:.1f}" '
                f'r="8" fill="#ffffff" stroke="{OUTCOME_COLOURS[verdict]}" stroke-width="2"/>'
                + _text(gx, y + row / 2 + 3, "✓" if bar.gate_passed else "✗", 11, "middle")
                + f"<title>gate {verdict} at {bar.gate_at:.1f} s</title></g>"
            )
    body += _legend(bottom + 50)
    return _svg(height, body, "Waves over time", "chart waves")


def _legend(y: float) -> list[str]:
    """The Gantt's key: outcomes, soak, rollback and gate marks."""
    items = [
        ('fill="#1a7f37"', "passed"),
        ('fill="#cf222e"', "failed"),
        (f'fill="{RUNNING_COLOUR}"', "running"),
        ('fill="#1a7f37"', "soak (hatched)"),
        (f'fill="{ROLLBACK_COLOUR}"', "rollback"),
        (f'fill="{ROLLBACK_FAILED_COLOUR}"', "rollback failed"),
    ]
    body, x = [], float(LEFT)
    for fill, label in items:
        body.append(f'<rect x="{x:.1f}" y="{y - 9}" width="14" height="10" {fill}/>')
        if label.startswith("soak"):
            body.append(
                f'<rect x="{x:.1f}" y="{y - 9}" width="14" height="10" fill="url(#soak-hatch)"/>'
            )
        body.append(_text(x + 18, y, label, 10))
        x += 28 + 6 * len(label)
    marks = "✓ gate passed   ✗ gate failed (each at the time the gate was evaluated)"
    body.append(_text(LEFT, y + 16, marks, 10))
    return body
