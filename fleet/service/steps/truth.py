"""What the fleet may conclude from what a cluster shows (pure): the step runner's judgements.

The rule (DESIGN: "the cluster is the record"): a step is verified, and a rollback done, only on
the agent's *observation* of the cluster as it is now (the ``observed`` block of the wave
document), never on the wave's phase history, which only says what once was. An observation
that does not hold is either

* a **regression** (the agent's verdict ``state: regressed``): the wave's classes no longer
  carry the selection the wave (or its rollback) set, or the control plane is not at the target
  version, or the terms resolve to no image; or the agent has no record of the wave at all, or
  observes it against the other selection; the cluster is not what the fleet asked, whatever
  the nodes do meanwhile; or
* **settling** (``state: settling``): the selection is right but some nodes are not yet on its
  images, drifted or being disrupted (a replacement or a consolidation under way); worth looking
  again for a while before calling it a failure. A verdict the fleet does not understand
  (``unknown``: a newer agent's state, or an older agent's answer without one) is settling too:
  never verified, never failed at once.

The fleet reads the verdict's ``state`` only, never the words of ``reason``
(:mod:`common.wire.observation`).

The fleet keeps, per step, what the wave replaced (:func:`record_of`), so a rollback can be asked
of an agent that lost its own record (:func:`rollback_body`); and it calls a wave "never applied
there" only when the cluster proves it (:func:`never_applied`): no class carries the target.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from common.wire.observation import Expected, VerdictState
from common.wire.status import StatusDocument
from common.wire.waves import RollbackRequest, WaveDocument, WaveRequest
from fleet.agentport import body_of
from fleet.domain.json import JSONObject

Verdict = Literal["holds", "regressed", "settling"]

Record = JSONObject
"""What the fleet keeps per step of what a wave replaced (``previous``,
``kubernetesVersionBefore``, ``imagesBefore``), as stored JSON."""


@dataclass(frozen=True)
class Judgement:
    """What an observation allows: ``verdict`` and, unless it holds, why."""

    verdict: Verdict
    reason: str = ""


def judge(wave: WaveDocument, expected: Expected) -> Judgement:
    """Judge a wave document's observation against ``expected`` (``target`` while applying
    and verifying, ``previous`` once rolled back); see the module docstring."""
    seen = wave.observed
    if seen.expected is not expected:
        if seen.expected is Expected.UNKNOWN:
            return Judgement(
                "settling",
                "the agent observes the wave against a selection the fleet does not know",
            )
        return Judgement(
            "regressed",
            f"the agent observes the wave against its {seen.expected} selection, "
            f"not the {expected} one (phase {wave.phase})",
        )
    reason = seen.reason or "the observation does not hold"
    match seen.state:
        case VerdictState.HOLDS if seen.holds:
            return Judgement("holds")
        case VerdictState.HOLDS:
            return Judgement("settling", "the agent's verdict holds but its observation does not")
        case VerdictState.REGRESSED:
            return Judgement("regressed", reason)
        case VerdictState.SETTLING:
            return Judgement("settling", reason)
        case VerdictState.UNKNOWN:
            return Judgement(
                "settling", f"{reason} (a verdict the fleet does not know: {seen.code})"
            )


def record_of(wave: WaveDocument) -> Record | None:
    """What a wave replaced, from the agent's answer to applying it (None when the answer
    does not say: the fleet then knows nothing it could restore)."""
    if not wave.previous:
        return None
    return {
        "previous": {name: p.model_dump(mode="json") for name, p in wave.previous.items()},
        "kubernetesVersionBefore": wave.kubernetes_version_before,
        "imagesBefore": list(wave.images_before)[:100],
    }


def rollback_body(
    previous: Mapping[str, object] | None, request: WaveRequest
) -> RollbackRequest | None:
    """The rollback request: the fleet's record of what the wave replaced (as
    :func:`record_of` wrote it), with the wave's target and names (None when the fleet has no
    record); raises pydantic's ValidationError when the record breaks the request's rules."""
    if not previous:
        return None
    classes = previous.get("previous")
    body: dict[str, object] = {
        "previous": {
            name: {k: v for k, v in dict(sel).items() if v is not None}
            for name, sel in (classes.items() if isinstance(classes, Mapping) else ())
            if isinstance(sel, Mapping)
        },
        **{k: v for k, v in previous.items() if k != "previous"},
    }
    sent = body_of(request)
    body.update({k: sent[k] for k in ("target", "rollout", "release") if k in sent})
    return RollbackRequest.model_validate(body)


def terms_text(terms: list[dict[str, object]]) -> str:
    """``amiSelectorTerms`` as people read them: ``alias al2023@v20251216``, ``tags
    team=web, env=prod``, terms joined by ``or`` (``no terms`` when there are none)."""
    if not terms:
        return "no terms"
    shown = []
    for term in terms:
        shown.append(
            ", ".join(
                f"{key} " + (", ".join(f"{k}={v}" for k, v in value.items()))
                if isinstance(value, Mapping)
                else f"{key} {value}"
                for key, value in term.items()
            )
        )
    return " or ".join(shown)


def never_applied(status: StatusDocument, request: WaveRequest) -> str | None:
    """The proof, from the cluster's status, that a wave never reached it (None when the status
    cannot prove it): no EC2NodeClass carries the target's ``amiSelectorTerms``, or the control
    plane is below a version target."""
    target = request.target
    if target.ami_selector_terms is not None:
        terms = [t.to_manifest() for t in target.ami_selector_terms]
        if any(c.ami_selector_terms == terms for c in status.node_classes):
            return None
        shown = "; ".join(
            f"{c.name}: {terms_text(c.ami_selector_terms)}" for c in status.node_classes
        )
        return f"never applied there: no EC2NodeClass carries the target ({shown[:300]})"
    version, current = target.kubernetes_version, status.kubernetes_version
    if version is not None and _minor(current) < _minor(version):
        return f"never applied there: the control plane runs {current}, below the target {version}"
    return None


def _minor(version: str) -> int:
    try:
        return int(version.split(".")[1])
    except (IndexError, ValueError):
        return -1


def images_text(by_image: Mapping[str, int]) -> str:
    """Nodes by image as people read them: ``40 nodes on ami-9015…, 2 on ami-9bc7…`` (most
    first), or ``no nodes``."""
    counts = sorted(
        ((int(n), str(image)) for image, n in by_image.items()),
        key=lambda pair: (-pair[0], pair[1]),
    )
    if not counts:
        return "no nodes"
    first, *rest = [f"{n} on {image}" for n, image in counts]
    return ", ".join([first.replace(" on ", " nodes on ", 1), *rest])
