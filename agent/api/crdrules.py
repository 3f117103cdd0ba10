"""Karpenter's admission rules, as data that the CRD generator (:mod:`agent.api.crds`) applies.

The models' JSON Schema gives the CRDs their shape, types, enums, bounds and field defaults; what
only the API server enforces at admission comes from here, rule for rule as Karpenter's own CRDs
(core and AWS provider v1.14.1) carry it: patterns, the CEL rules (``x-kubernetes-validations``)
with Karpenter's messages, object and list defaults, list and map types, formats and required
fields. So a manifest the API server refuses under Karpenter is refused under driftwave with the
same message, and an accepted one is stored with the same defaults.

Each kind maps a JSON path (``spec.disruption.budgets[]``: ``[]`` is a list's items, ``{}`` a
map's values, ``""`` the root) to the schema keywords set there. A keyword set to ``None`` is
removed: the models say it another way than Karpenter's CRD does (``minLength: 1`` where
Karpenter's rule says "role cannot be empty"). Patterns and lists the models already hold are
imported from their modules, so each has one home.
"""

from __future__ import annotations

from typing import Any

from agent.api.labels import (
    AWS_WELL_KNOWN_LABEL_KEYS,
    CAPACITY_TYPE_LABEL,
    HOSTNAME_LABEL,
    LABEL_KEY,
    NODEPOOL_LABEL,
)
from common.durations import (
    BUDGET_DURATION,
    BUDGET_NODES,
    BUDGET_SCHEDULE,
    DURATION,
    DURATION_OR_NEVER,
)
from common.names import LABEL_VALUE

Keywords = dict[str, Any]
Rules = dict[str, Keywords]

CEL = "x-kubernetes-validations"
ATOMIC: Keywords = {"x-kubernetes-list-type": "atomic"}
DATE_TIME: Keywords = {"format": "date-time"}
INT32: Keywords = {"format": "int32"}
INT64: Keywords = {"format": "int64"}


def cel(*rules: tuple[str, str]) -> Keywords:
    """``x-kubernetes-validations`` from (rule, message) pairs."""
    return {CEL: [{"message": message, "rule": rule} for rule, message in rules]}


def at(prefix: str, rules: Rules) -> Rules:
    """``rules`` re-rooted under ``prefix`` (a NodeClaim's spec rules in a NodePool template)."""
    return {f"{prefix}.{path}" if path else prefix: keywords for path, keywords in rules.items()}


def _quoted(values: tuple[str, ...]) -> str:
    return ", ".join(f'"{v}"' for v in values)


# -- labels and requirements ----------------------------------------------------------------------

_DOMAIN_ALLOWED = {
    "karpenter.sh": (CAPACITY_TYPE_LABEL, NODEPOOL_LABEL),
    "karpenter.k8s.aws": AWS_WELL_KNOWN_LABEL_KEYS,
}


def _domain_rule(domain: str, variable: str) -> tuple[str, str]:
    allowed = _quoted(_DOMAIN_ALLOWED[domain])
    rule = f'{variable} in [{allowed}] || !{variable}.find("^([^/]+)").endsWith("{domain}")'
    return rule, f'label domain "{domain}" is restricted'


def _label_rules(restrict_nodepool: bool, each: bool) -> list[tuple[str, str]]:
    """The restricted-label rules on a requirement key (``self``) or on every label (``each``)."""
    variable = "x" if each else "self"

    def over(rule: str) -> str:
        return f"self.all(x, {rule})" if each else rule

    rules = [_domain_rule("karpenter.sh", variable)]
    if restrict_nodepool:
        rules.append(
            (f'{variable} != "{NODEPOOL_LABEL}"', f'label "{NODEPOOL_LABEL}" is restricted')
        )
    rules.append((f'{variable} != "{HOSTNAME_LABEL}"', f'label "{HOSTNAME_LABEL}" is restricted'))
    rules.append(_domain_rule("karpenter.k8s.aws", variable))
    return [(over(rule), message) for rule, message in rules]


_REQUIREMENTS = (
    (
        "self.all(x, x.operator == 'In' ? x.values.size() != 0 : true)",
        "requirements with operator 'In' must have a value defined",
    ),
    (
        "self.all(x, (x.operator == 'Gt' || x.operator == 'Lt' || x.operator == 'Gte' || "
        "x.operator == 'Lte') ? (x.values.size() == 1 && int(x.values[0]) >= 0) : true)",
        "requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer "
        "value",
    ),
    (
        "self.all(x, (x.operator == 'In' && has(x.minValues)) ? "
        "x.values.size() >= x.minValues : true)",
        "requirements with 'minValues' must have at least that many values specified in the "
        "'values' field",
    ),
)
_TAINTS: Rules = {
    "": ATOMIC,
    "[].key": {"pattern": LABEL_KEY},
    "[].value": {"pattern": LABEL_KEY},
    "[].timeAdded": DATE_TIME,
}


def nodeclaim_spec(in_nodepool: bool) -> Rules:
    """A NodeClaim's spec rules (also a NodePool's ``spec.template.spec``)."""
    not_empty = {
        name: cel(("self != ''", f"{name} may not be empty")) for name in ("group", "kind", "name")
    }
    return {
        "expireAfter": {"pattern": DURATION_OR_NEVER},
        "terminationGracePeriod": {"pattern": DURATION},
        "nodeClassRef.group": {"pattern": r"^[^/]*$", **not_empty["group"]},
        "nodeClassRef.kind": not_empty["kind"],
        "nodeClassRef.name": not_empty["name"],
        "requirements": {**ATOMIC, **cel(*_REQUIREMENTS)},
        "requirements[].key": {
            "pattern": LABEL_KEY,
            **cel(*_label_rules(restrict_nodepool=in_nodepool, each=False)),
        },
        "requirements[].operator": {
            "enum": ["Gte", "Lte", "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
        },
        # On the list, not its items, as Karpenter's CRD has it: the API server checks string
        # keywords on strings only, so (under Karpenter too) these two never refuse anything.
        "requirements[].values": {**ATOMIC, "maxLength": 63, "pattern": LABEL_VALUE},
        **at("taints", _TAINTS),
        **at("startupTaints", _TAINTS),
    }


# -- status ---------------------------------------------------------------------------------------

_CONDITION_TYPE = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
_REASON = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
_REQUIRED_CONDITION = ["lastTransitionTime", "message", "reason", "status", "type"]


def conditions(*, strict: bool, listed_by_type: bool) -> Rules:
    """``status.conditions``: metav1.Condition's rules (``strict``: reason and message required,
    as in NodePools and EC2NodeClasses; a NodeClaim's may omit them and leave reason empty)."""
    listing: Keywords = (
        {"x-kubernetes-list-map-keys": ["type"], "x-kubernetes-list-type": "map"}
        if listed_by_type
        else {}
    )
    reason: Keywords = (
        {"maxLength": 1024, "minLength": 1, "pattern": _REASON}
        if strict
        else {"maxLength": 1024, "pattern": f"^({_REASON[1:-1]}|)$"}
    )
    return {
        "": listing,
        "[]": {
            "required": _REQUIRED_CONDITION if strict else ["lastTransitionTime", "status", "type"]
        },
        "[].lastTransitionTime": DATE_TIME,
        "[].message": {"maxLength": 32768},
        "[].observedGeneration": {**INT64, "minimum": 0},
        "[].reason": reason,
        "[].status": {"enum": ["True", "False", "Unknown"]},
        "[].type": {"maxLength": 316, "pattern": _CONDITION_TYPE},
    }


# -- NodePool -------------------------------------------------------------------------------------

NODEPOOL: Rules = {
    "": {"required": ["spec"]},
    "spec": cel(
        (
            "has(self.replicas) == has(oldSelf.replicas)",
            "Cannot transition NodePool between static (replicas set) and dynamic (replicas "
            "unset) provisioning modes",
        ),
        (
            "!has(self.replicas) || (!has(self.limits) || size(self.limits) == 0 || "
            "(size(self.limits) == 1 && 'nodes' in self.limits))",
            "only 'limits.nodes' is supported on static NodePools",
        ),
        (
            "!has(self.replicas) || !has(self.weight)",
            "'weight' is not supported on static NodePools",
        ),
    ),
    "spec.disruption": {"default": {"consolidateAfter": "0s"}, "required": ["consolidateAfter"]},
    "spec.disruption.consolidateAfter": {"default": None, "pattern": DURATION_OR_NEVER},
    "spec.disruption.budgets": {
        "default": [{"nodes": "10%"}],
        **ATOMIC,
        **cel(
            (
                "self.all(x, has(x.schedule) == has(x.duration))",
                "'schedule' must be set with 'duration'",
            )
        ),
    },
    "spec.disruption.budgets[]": {"required": ["nodes"]},
    "spec.disruption.budgets[].nodes": {"pattern": BUDGET_NODES},
    "spec.disruption.budgets[].schedule": {"pattern": BUDGET_SCHEDULE},
    "spec.disruption.budgets[].duration": {"pattern": BUDGET_DURATION},
    "spec.disruption.budgets[].reasons": {"x-kubernetes-list-type": "set"},
    "spec.replicas": INT64,
    "spec.weight": INT32,
    "spec.template.metadata.annotations": {"x-kubernetes-map-type": "granular"},
    "spec.template.metadata.labels": {
        "x-kubernetes-map-type": "atomic",
        **cel(*_label_rules(restrict_nodepool=True, each=True)),
    },
    "spec.template.metadata.labels{}": {"maxLength": 63, "pattern": LABEL_VALUE},
    "spec.template.spec.nodeClassRef": cel(
        ("self.group == oldSelf.group", "nodeClassRef.group is immutable"),
        ("self.kind == oldSelf.kind", "nodeClassRef.kind is immutable"),
    ),
    **at("spec.template.spec", nodeclaim_spec(in_nodepool=True)),
    **at("status.conditions", conditions(strict=True, listed_by_type=True)),
    "status.nodeClassObservedGeneration": INT64,
    "status.nodes": {"default": 0, **INT64},
}

# -- NodeClaim ------------------------------------------------------------------------------------

NODECLAIM: Rules = {
    "": {"required": ["spec"]},
    "spec": cel(("self == oldSelf", "spec is immutable")),
    **at("spec", nodeclaim_spec(in_nodepool=False)),
    **at("status.conditions", conditions(strict=False, listed_by_type=True)),
    "status.lastPodEventTime": DATE_TIME,
}
