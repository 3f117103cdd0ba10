"""The data behind the report's charts, from the demo's summary and samples: nodes per image
summed over a group of clusters (the fleet, a ring), the images in the order they appeared,
the rollout's time span and each wave as a bar on the time axis."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from driftwave.demo.plots import Sample, WaveBar


def _time(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def since(origin: str | None, stamp: str | None) -> float | None:
    """Seconds from ``origin`` to ``stamp`` (RFC 3339); None when either is missing."""
    if not origin or not stamp:
        return None
    return (_time(stamp) - _time(origin)).total_seconds()


def combine(samples: dict[str, list[Sample]], clusters: Iterable[str]) -> list[Sample]:
    """The nodes per image of ``clusters`` together, at every time any of them was sampled:
    each cluster counts with its latest sample at or before that time (clusters are sampled
    at different times; one not yet sampled counts with its first sample)."""
    names = [c for c in clusters if samples.get(c)]
    times = sorted({t for c in names for t, _ in samples[c]})
    position = dict.fromkeys(names, 0)
    out: list[Sample] = []
    for t in times:
        total: dict[str, int] = {}
        for name in names:
            series = samples[name]
            while position[name] + 1 < len(series) and series[position[name] + 1][0] <= t:
                position[name] += 1
            for image, count in series[position[name]][1].items():
                total[image] = total.get(image, 0) + count
        out.append((t, total))
    return out


def by_name(samples: dict[str, list[Sample]], names: dict[str, str]) -> dict[str, list[Sample]]:
    """The samples with each image counted under its name (``al2023@v20251216``: the AMIs of
    one release in several regions are one area); an image with no name keeps its id."""
    out: dict[str, list[Sample]] = {}
    for cluster, series in samples.items():
        renamed = []
        for t, counts in series:
            total: dict[str, int] = {}
            for image, count in counts.items():
                key = names.get(image, image)
                total[key] = total.get(key, 0) + count
            renamed.append((t, total))
        out[cluster] = renamed
    return out


def until(series: list[Sample], end: float) -> list[Sample]:
    """``series`` held at its last counts up to ``end`` (a group sampled last before the
    rollout's end still draws to the end of the axis)."""
    if series and series[-1][0] < end:
        return [*series, (end, dict(series[-1][1]))]
    return series


def image_order(series: Sequence[Sample]) -> list[str]:
    """The images of ``series`` in the order they first appear (ties: by id), so the old
    image is stacked at the bottom and the new one above it."""
    first: dict[str, float] = {}
    for t, counts in series:
        for image, count in counts.items():
            if count > 0:
                first.setdefault(image, t)
    return sorted(first, key=lambda image: (first[image], image))


def span(result: dict[str, Any], samples: dict[str, list[Sample]]) -> float:
    """The seconds the charts cover: the rollout's start to its end (or to the last sample or
    wave end, whichever is later)."""
    rollout = result["rollout"]
    origin = rollout.get("startedAt")
    ends = [since(origin, rollout.get("finishedAt")) or 0.0]
    ends += [t for series in samples.values() for t, _ in series]
    for ring in result["rings"]:
        for wave in ring["waves"]:
            ends.append(since(origin, wave.get("finishedAt")) or 0.0)
    return max(max(ends), 1.0)


def wave_bars(result: dict[str, Any]) -> list[WaveBar]:
    """Each wave of the summary as a bar: its start and end, its soak (the ``soakSeconds``
    before ``soakUntil``), its gate's evaluation time and verdict, and when any of its
    clusters was rolled back (or its rollback was tried), the rollback up to the rollout's
    end (``rollback_failed`` when a cluster's rollback failed)."""
    rollout = result["rollout"]
    origin = rollout.get("startedAt")
    rollbacks = {c["name"]: c.get("rollback") for c in result["clusters"]}
    rollbacks |= {
        c["name"]: "rolled-back" for c in result["clusters"] if c["state"] == "rolled-back"
    }
    bars = []
    for ring in result["rings"]:
        for wave in ring["waves"]:
            soak_end = since(origin, wave.get("soakUntil"))
            soak_seconds = wave.get("soakSeconds")
            soak = (
                (soak_end - float(soak_seconds), soak_end)
                if soak_end is not None and soak_seconds
                else None
            )
            gate = wave.get("gate") or {}
            gate_at = since(origin, gate.get("evaluatedAt"))
            tried = [rollbacks.get(c) for c in wave["clusters"] if rollbacks.get(c)]
            bars.append(
                WaveBar(
                    label=f"{ring['name']} · wave {wave['index']}",
                    clusters=list(wave["clusters"]),
                    state=wave["state"],
                    start=since(origin, wave.get("startedAt")),
                    end=since(origin, wave.get("finishedAt")),
                    soak=soak,
                    gate_at=gate_at,
                    gate_passed=bool(gate.get("passed")) if gate_at is not None else None,
                    rollback_end=since(origin, rollout.get("finishedAt")) if tried else None,
                    rollback_failed="failed" in tried,
                )
            )
    return bars
