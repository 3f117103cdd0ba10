"""Pure scheduling primitives (no I/O), faithful to Karpenter v1 and kube-scheduler.

* :mod:`~agent.scheduling.requirement` / :mod:`~agent.scheduling.requirements`: the requirements
  algebra (value sets per label key, intersection, compatibility of a pod with a node template);
* :mod:`~agent.scheduling.resources`: what a pod requests (a
  :class:`~agent.catalog.resources.ResourceVector`);
* :mod:`~agent.scheduling.taints`: taints and tolerations;
* :mod:`~agent.scheduling.fit`: whether one pod fits on one concrete node, with kube-scheduler's
  reasons.

Pod affinity, anti-affinity and topology spread are the solver's (:mod:`~agent.scheduling.topology`,
:mod:`~agent.scheduling.scheduler`), not these primitives'.
"""

from agent.scheduling.fit import (
    HostPort,
    NodeState,
    fit_reason,
    fit_reasons,
    host_ports,
    matches_node_affinity,
)
from agent.scheduling.requirement import (
    NORMALIZED_LABELS,
    WELL_KNOWN_LABELS,
    InvalidRequirement,
    Requirement,
    normalize_key,
)
from agent.scheduling.requirements import (
    IncompatibleRequirements,
    KeyConflict,
    PreferredTerm,
    Requirements,
    pod_requirement_alternatives,
    preferred_node_affinity,
)
from agent.scheduling.resources import pod_requests
from agent.scheduling.taints import (
    DISRUPTED_NO_SCHEDULE_TAINT,
    UNREGISTERED_NO_EXECUTE_TAINT,
    effective_node_taints,
    template_untolerated,
    tolerates,
    untolerated,
)

__all__ = [
    "DISRUPTED_NO_SCHEDULE_TAINT",
    "NORMALIZED_LABELS",
    "UNREGISTERED_NO_EXECUTE_TAINT",
    "WELL_KNOWN_LABELS",
    "HostPort",
    "IncompatibleRequirements",
    "InvalidRequirement",
    "KeyConflict",
    "NodeState",
    "PreferredTerm",
    "Requirement",
    "Requirements",
    "effective_node_taints",
    "fit_reason",
    "fit_reasons",
    "host_ports",
    "matches_node_affinity",
    "normalize_key",
    "pod_requests",
    "pod_requirement_alternatives",
    "preferred_node_affinity",
    "template_untolerated",
    "tolerates",
    "untolerated",
]
