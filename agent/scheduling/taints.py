"""Taints and tolerations, with Kubernetes' matching rules and Karpenter's scheduling rules.

A toleration tolerates a taint when its effect is empty or equal to the taint's, its key is empty
or equal to the taint's, and either its operator is ``Exists`` or (``Equal``, the default) its
value equals the taint's (a missing value is the empty string). So ``{operator: Exists}`` with no
key tolerates every taint.

kube-scheduler only filters on ``NoSchedule`` and ``NoExecute`` taints; ``PreferNoSchedule`` is a
scoring hint that never blocks (:func:`untolerated`). Karpenter is stricter for the nodes it is
about to create: a pod must tolerate every taint of the NodePool's ``taints``, PreferNoSchedule
included, until it relaxes the pod's preferences (:func:`template_untolerated`). A NodePool's
``startupTaints`` are never checked: something on the node removes them once it is ready, so
pods need not tolerate them. For an existing node Karpenter launched that is not yet
initialized, its startup taints and the well-known ephemeral taints (not-ready, unreachable,
uninitialized, unregistered) are ignored as well (:func:`effective_node_taints`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final, Protocol

from agent.api.kube import Taint, Toleration

UNREGISTERED_TAINT_KEY: Final = "karpenter.sh/unregistered"
DISRUPTED_TAINT_KEY: Final = "karpenter.sh/disrupted"
UNSCHEDULABLE_TAINT_KEY: Final = "node.kubernetes.io/unschedulable"

UNREGISTERED_NO_EXECUTE_TAINT: Final = Taint(key=UNREGISTERED_TAINT_KEY, effect="NoExecute")
"""Karpenter puts this on a node it launched until the node registers (then removes it)."""
DISRUPTED_NO_SCHEDULE_TAINT: Final = Taint(key=DISRUPTED_TAINT_KEY, effect="NoSchedule")
"""Karpenter puts this on a node it is disrupting so that no new pods land there."""
UNSCHEDULABLE_TAINT: Final = Taint(key=UNSCHEDULABLE_TAINT_KEY, effect="NoSchedule")
"""What a cordon (``spec.unschedulable``) stands for; a pod tolerating it ignores the cordon."""

KNOWN_EPHEMERAL_TAINTS: Final[tuple[Taint, ...]] = (
    Taint(key="node.kubernetes.io/not-ready", effect="NoSchedule"),
    Taint(key="node.kubernetes.io/not-ready", effect="NoExecute"),
    Taint(key="node.kubernetes.io/unreachable", effect="NoSchedule"),
    Taint(key="node.cloudprovider.kubernetes.io/uninitialized", value="true", effect="NoSchedule"),
    UNREGISTERED_NO_EXECUTE_TAINT,
)
"""Taints a node carries while it starts up; matched by key and effect."""
KNOWN_EPHEMERAL_TAINT_KEY_PREFIXES: Final = ("readiness.k8s.io/",)
"""Key prefixes of ephemeral taints (the node readiness controller's rules)."""

BLOCKING_EFFECTS: Final = frozenset({"NoSchedule", "NoExecute"})
"""The effects kube-scheduler filters on."""

__all__ = [
    "BLOCKING_EFFECTS",
    "DISRUPTED_NO_SCHEDULE_TAINT",
    "DISRUPTED_TAINT_KEY",
    "KNOWN_EPHEMERAL_TAINTS",
    "KNOWN_EPHEMERAL_TAINT_KEY_PREFIXES",
    "UNREGISTERED_NO_EXECUTE_TAINT",
    "UNREGISTERED_TAINT_KEY",
    "UNSCHEDULABLE_TAINT",
    "UNSCHEDULABLE_TAINT_KEY",
    "HasTaints",
    "effective_node_taints",
    "is_known_ephemeral_taint",
    "same_taint",
    "template_untolerated",
    "tolerates",
    "toleration_tolerates",
    "untolerated",
]


class HasTaints(Protocol):
    """A NodePool template spec or NodeClaim spec: its ``taints`` (``startupTaints`` unused)."""

    @property
    def taints(self) -> Sequence[Taint] | None: ...


def toleration_tolerates(toleration: Toleration, taint: Taint) -> bool:
    """Whether one toleration tolerates ``taint`` (Kubernetes' ``ToleratesTaint``)."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator == "Exists":
        return True
    return (toleration.value or "") == (taint.value or "")


def tolerates(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    """Whether any of ``tolerations`` tolerates ``taint``."""
    return any(toleration_tolerates(t, taint) for t in tolerations)


def untolerated(
    tolerations: Sequence[Toleration], taints: Iterable[Taint], *, prefer_no_schedule: bool = False
) -> list[Taint]:
    """The taints that keep a pod with ``tolerations`` off a node, in order: NoSchedule and
    NoExecute taints no toleration matches; PreferNoSchedule taints too when
    ``prefer_no_schedule`` (Karpenter's strict first pass)."""
    return [
        taint
        for taint in taints
        if (prefer_no_schedule or taint.effect in BLOCKING_EFFECTS)
        and not tolerates(tolerations, taint)
    ]


def template_untolerated(
    tolerations: Sequence[Toleration], template: HasTaints, *, relaxed: bool = False
) -> list[Taint]:
    """The taints of a NodePool template (or NodeClaim) a pod does not tolerate, as Karpenter
    checks a pod against a node it may create: every taint in ``taints`` counts, PreferNoSchedule
    included unless ``relaxed`` (Karpenter's last relaxation step tolerates them); the
    template's ``startupTaints`` are ignored."""
    return untolerated(tolerations, template.taints or (), prefer_no_schedule=not relaxed)


def same_taint(a: Taint, b: Taint) -> bool:
    """Whether two taints have the same key and effect (Kubernetes' ``MatchTaint``)."""
    return a.key == b.key and a.effect == b.effect


def is_known_ephemeral_taint(taint: Taint) -> bool:
    """Whether ``taint`` is one a node carries only while it starts up."""
    if taint.key.startswith(KNOWN_EPHEMERAL_TAINT_KEY_PREFIXES):
        return True
    return any(same_taint(taint, known) for known in KNOWN_EPHEMERAL_TAINTS)


def effective_node_taints(
    taints: Iterable[Taint], *, initialized: bool, startup_taints: Iterable[Taint] = ()
) -> list[Taint]:
    """The taints Karpenter schedules against on an existing node it manages.

    Once the node is initialized, all of them. Before that, the known ephemeral taints and the
    taints matching (by key and effect) one of its NodeClaim's ``startup_taints`` are left out,
    since they will go away. (Karpenter applies this only to nodes it manages; pass
    ``initialized=True`` for any other node.)
    """
    if initialized:
        return list(taints)
    startup = list(startup_taints)
    return [
        taint
        for taint in taints
        if not is_known_ephemeral_taint(taint)
        and not any(same_taint(taint, other) for other in startup)
    ]
