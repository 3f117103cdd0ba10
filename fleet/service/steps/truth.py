"""What the fleet may conclude from what a cluster shows (pure): the step runner's judgements.

The rule (DESIGN: "the cluster is the record"): a step is verified, and a rollback done, only on
the agent's *observation* of the cluster as it is now (the ``observed`` block of the wave
document), never on the wave's phase history, which only says what once was. An observation
that does not hold is either

* a **regression**: the wave's classes no longer carry the selection the wave (or its rollback)
  set, or the control plane is not at the target version, or the agent has no record of the
  wave at all; the cluster is not what the fleet asked, whatever the nodes do meanwhile; or
* **settling**: the selection is right but some nodes are not yet on its images, drifted or
  being disrupted (a replacement or a consolidation under way); worth looking again for a
  while before calling it a failure.

The fleet keeps, per step, what the wave replaced (:func:`record_of`), so a rollback can be asked
of an agent that lost its own record (:func:`rollback_body`); and it calls a wave "never applied
there" only when the cluster proves it (:func:`never_applied`): no class carries the target.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

Verdict = Literal["holds", "regressed", "settling"]

_REGRESSIONS = ("no longer carries", "the control plane runs", "resolves to no image")
"""Phrases of the agent's ``observed.reason`` that mean the selection itself is not there."""


@dataclass(frozen=True)
class Judgement:
    """What an observation allows: ``verdict`` and, unless it holds, why."""

    verdict: Verdict
    reason: str = ""


def judge(wave: Mapping[str, Any], expected: str) -> Judgement:
    """Judge a wave document's observation against ``expected`` (``target`` while applying
    and verifying, ``previous`` once rolled back); see the module docstring."""
    observed = wave.get("observed")
    if not isinstance(observed, Mapping):
        return Judgement("regressed", "the agent reports no observation of the cluster")
    if observed.get("expected") != expected:
        return Judgement(
            "regressed",
            f"the agent observes the wave against its {observed.get('expected')} selection, "
            f"not the {expected} one (phase {wave.get('phase')})",
        )
    if observed.get("holds") is True:
        return Judgement("holds")
    reason = str(observed.get("reason") or "the observation does not hold")
    if any(phrase in reason for phrase in _REGRESSIONS):
        return Judgement("regressed", reason)
    return Judgement("settling", reason)


def record_of(wave: Mapping[str, Any]) -> dict[str, Any] | None:
    """What a wave replaced, from the agent's answer to applying it (None when the answer
    does not say: the fleet then knows nothing it could restore)."""
    previous = wave.get("previous")
    if not isinstance(previous, Mapping) or not previous:
        return None
    record: dict[str, Any] = {"previous": dict(previous)}
    if isinstance(wave.get("kubernetesVersionBefore"), str):
        record["kubernetesVersionBefore"] = wave["kubernetesVersionBefore"]
    images = wave.get("imagesBefore")
    if isinstance(images, list):
        record["imagesBefore"] = [str(i) for i in images][:100]
    return record


def rollback_body(
    previous: Mapping[str, Any] | None, request: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The body of a rollback request: the fleet's record of what the wave replaced, with the
    wave's target and names (None when the fleet has no record)."""
    if not previous:
        return None
    body = {
        "previous": {
            name: {k: v for k, v in dict(sel).items() if v is not None}
            for name, sel in dict(previous["previous"]).items()
        },
        **{k: v for k, v in previous.items() if k != "previous"},
    }
    for key in ("target", "rollout", "release"):
        if key in request:
            body[key] = request[key]
    return body


def terms_text(terms: Any) -> str:
    """``amiSelectorTerms`` as people read them: ``alias al2023@v20251216``, ``tags
    team=web, env=prod``, terms joined by ``or`` (``no terms`` when there are none)."""
    if not isinstance(terms, list) or not terms:
        return "no terms"
    shown = []
    for term in terms:
        fields = term.items() if isinstance(term, Mapping) else [("term", term)]
        shown.append(
            ", ".join(
                f"{key} " + (", ".join(f"{k}={v}" for k, v in value.items()))
                if isinstance(value, Mapping)
                else f"{key} {value}"
                for key, value in fields
            )
        )
    return " or ".join(shown)


def _same_terms(a: Any, b: Any) -> bool:
    return isinstance(a, list) and isinstance(b, list) and a == b


def never_applied(status: Mapping[str, Any], request: Mapping[str, Any]) -> str | None:
    """The proof, from the cluster's status, that a wave never reached it (None when the status
    cannot prove it): no EC2NodeClass carries the target's ``amiSelectorTerms``, or the control
    plane is below a version target."""
    target = request.get("target") or {}
    classes = status.get("nodeClasses")
    terms = target.get("amiSelectorTerms")
    if terms is not None and isinstance(classes, list):
        carrying = [
            str(c.get("name"))
            for c in classes
            if isinstance(c, Mapping) and _same_terms(c.get("amiSelectorTerms"), terms)
        ]
        if carrying:
            return None
        shown = "; ".join(
            f"{c.get('name')}: {terms_text(c.get('amiSelectorTerms'))}"
            for c in classes
            if isinstance(c, Mapping)
        )
        return f"never applied there: no EC2NodeClass carries the target ({shown[:300]})"
    version = target.get("kubernetesVersion")
    current = status.get("kubernetesVersion")
    if isinstance(version, str) and isinstance(current, str) and _minor(current) < _minor(version):
        return f"never applied there: the control plane runs {current}, below the target {version}"
    return None


def _minor(version: str) -> int:
    try:
        return int(version.split(".")[1])
    except (IndexError, ValueError):
        return -1


def images_text(by_image: Any) -> str:
    """Nodes by image as people read them: ``40 nodes on ami-9015…, 2 on ami-9bc7…`` (most
    first), or ``no nodes``."""
    counts = sorted(
        ((int(n), str(image)) for image, n in dict(by_image or {}).items()),
        key=lambda pair: (-pair[0], pair[1]),
    )
    if not counts:
        return "no nodes"
    first, *rest = [f"{n} on {image}" for n, image in counts]
    return ", ".join([first.replace(" on ", " nodes on ", 1), *rest])
