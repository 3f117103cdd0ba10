"""Karpenter objects for the differential tests, and hypothesis strategies that vary them.

Every object is a plain manifest (the JSON Karpenter reads), valid for driftwave's readers and
Karpenter's CRDs alike, so both sides are given exactly the same input.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

Manifest = dict[str, Any]

NODE_CLASS_REF = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}


def nodepool(
    name: str = "default",
    *,
    metadata: Manifest | None = None,
    spec: Manifest | None = None,
    requirements: list[Manifest] | None = None,
    disruption: Manifest | None = None,
    weight: int | None = None,
    limits: Manifest | None = None,
) -> Manifest:
    """A ``karpenter.sh/v1`` NodePool with the given template metadata and spec fields."""
    template: Manifest = {
        "spec": {"nodeClassRef": dict(NODE_CLASS_REF), "requirements": requirements or []}
    }
    if metadata:
        template["metadata"] = metadata
    template["spec"].update(spec or {})
    pool_spec: Manifest = {"template": template}
    if disruption is not None:
        pool_spec["disruption"] = disruption
    if weight is not None:
        pool_spec["weight"] = weight
    if limits is not None:
        pool_spec["limits"] = limits
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": pool_spec,
    }


def ec2nodeclass(spec: Manifest | None = None, status: Manifest | None = None) -> Manifest:
    """A ``karpenter.k8s.aws/v1`` EC2NodeClass: an AL2023 alias, one subnet and one security
    group term, a role; ``spec`` fields replace these."""
    base: Manifest = {
        "role": "KarpenterNodeRole",
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
    }
    base.update(spec or {})
    manifest: Manifest = {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default"},
        "spec": base,
    }
    if status is not None:
        manifest["status"] = status
    return manifest


def optional(values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``values`` or None (None: the field is left out)."""
    return st.none() | values


def _nonempty_map(keys: list[str], values: list[str]) -> st.SearchStrategy[dict[str, str]]:
    return st.dictionaries(st.sampled_from(keys), st.sampled_from(values), min_size=1)


def _taints(keys: list[str]) -> st.SearchStrategy[list[Manifest]]:
    """Taints with distinct key/effect pairs (listed in a random order)."""
    effects = ["NoSchedule", "PreferNoSchedule", "NoExecute"]

    def taint(pair: tuple[str, str], value: str | None) -> Manifest:
        out = {"key": pair[0], "effect": pair[1]}
        if value is not None:
            out["value"] = value
        return out

    pairs = st.lists(
        st.tuples(st.sampled_from(keys), st.sampled_from(effects)),
        min_size=1,
        max_size=3,
        unique=True,
    )
    return pairs.flatmap(
        lambda chosen: st.tuples(*(st.sampled_from([None, "x", "y"]) for _ in chosen)).map(
            lambda values: [taint(p, v) for p, v in zip(chosen, values, strict=True)]
        )
    )


REQUIREMENTS = [
    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]},
    {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"]},
    {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["4"]},
    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
]


@st.composite
def template_fields(draw: st.DrawFn) -> dict[str, Any]:
    """The fields of a NodePool (template and outside it) that a pair of pools may share."""
    return {
        "labels": draw(
            optional(_nonempty_map(["team", "tier", "example.com/owner"], ["a", "b", ""]))
        ),
        "annotations": draw(optional(_nonempty_map(["note", "example.com/cost"], ["x", "y"]))),
        "taints": draw(optional(_taints(["dedicated", "gpu"]))),
        "startupTaints": draw(optional(_taints(["example.com/booting"]))),
        "nodeClass": draw(st.sampled_from(["default", "other"])),
        "expireAfter": draw(optional(st.sampled_from(["720h", "43200m", "24h", "1440m", "Never"]))),
        "terminationGracePeriod": draw(optional(st.sampled_from(["1h", "60m", "30m"]))),
        "requirements": draw(st.lists(st.sampled_from(REQUIREMENTS), max_size=2, unique_by=str)),
        "weight": draw(optional(st.integers(1, 100))),
        "budget": draw(st.sampled_from(["10%", "0", "3"])),
    }


def pool_from(fields: dict[str, Any]) -> Manifest:
    """The NodePool a :func:`template_fields` draw describes."""
    metadata = {k: fields[k] for k in ("labels", "annotations") if fields[k] is not None}
    spec: Manifest = {
        k: fields[k]
        for k in ("taints", "startupTaints", "expireAfter", "terminationGracePeriod")
        if fields[k] is not None
    }
    pool = nodepool(
        metadata=metadata,
        spec=spec,
        requirements=copy.deepcopy(fields["requirements"]),
        disruption={"budgets": [{"nodes": fields["budget"]}]},
        weight=fields["weight"],
    )
    pool["spec"]["template"]["spec"]["nodeClassRef"]["name"] = fields["nodeClass"]
    return pool


AMI_CHOICES: list[tuple[list[Manifest], str | None]] = [
    ([{"alias": "al2023@latest"}], None),
    ([{"alias": "al2023@latest"}], "AL2023"),
    ([{"alias": "al2023@v20240807"}], None),
    ([{"alias": "bottlerocket@latest"}], None),
    ([{"id": "ami-0123456789abcdef0"}], "AL2023"),
    ([{"id": "ami-0123456789abcdef0"}], "Custom"),
    ([{"tags": {"team": "a"}}], "AL2023"),
]


@st.composite
def nodeclass_fields(draw: st.DrawFn) -> dict[str, Any]:
    """The spec fields of an EC2NodeClass that a pair of node classes may share."""
    grace = draw(optional(st.sampled_from(["1m", "60s", "2m", "90s", "1m30s"])))
    kubelet: Manifest | None = draw(
        optional(
            st.fixed_dictionaries(
                {},
                optional={
                    "maxPods": st.sampled_from([20, 110]),
                    "systemReserved": st.sampled_from([{"cpu": "100m"}, {"memory": "200Mi"}]),
                },
            )
        )
    )
    if grace is not None:
        kubelet = {**(kubelet or {}), "evictionSoft": {"memory.available": "500Mi"}}
        kubelet["evictionSoftGracePeriod"] = {"memory.available": grace}
    if kubelet == {}:
        kubelet = None  # an empty kubelet is the known departure (test_hashes)
    return {
        "ami": draw(st.sampled_from(AMI_CHOICES)),
        "role": draw(st.sampled_from(["KarpenterNodeRole", "OtherRole"])),
        "subnetTerms": draw(st.sampled_from([[{"id": "subnet-1"}], [{"tags": {"a": "b"}}]])),
        "tags": draw(optional(_nonempty_map(["team", "env"], ["a", "b"]))),
        "userData": draw(optional(st.sampled_from(["", "echo hi"]))),
        "detailedMonitoring": draw(optional(st.booleans())),
        "ipPrefixCount": draw(optional(st.sampled_from([1, 2]))),
        "kubelet": kubelet,
        "volumeSize": draw(optional(st.sampled_from(["20Gi", "40Gi"]))),
    }


def nodeclass_from(fields: dict[str, Any], status: Manifest | None = None) -> Manifest:
    """The EC2NodeClass a :func:`nodeclass_fields` draw describes."""
    terms, family = fields["ami"]
    spec: Manifest = {
        "amiSelectorTerms": copy.deepcopy(terms),
        "role": fields["role"],
        "subnetSelectorTerms": copy.deepcopy(fields["subnetTerms"]),
    }
    if family is not None:
        spec["amiFamily"] = family
    for key in ("tags", "userData", "detailedMonitoring", "ipPrefixCount", "kubelet"):
        if fields[key] is not None:
            spec[key] = copy.deepcopy(fields[key])
    if fields["volumeSize"] is not None:
        ebs = {"volumeSize": fields["volumeSize"], "volumeType": "gp3"}
        spec["blockDeviceMappings"] = [{"deviceName": "/dev/xvda", "ebs": ebs}]
    return ec2nodeclass(spec, status)


RESPELLINGS = {
    "720h": "43200m",
    "43200m": "720h",
    "24h": "1440m",
    "1440m": "24h",
    "1h": "60m",
    "60m": "1h",
    "1m": "60s",
    "60s": "1m",
    "90s": "1m30s",
    "1m30s": "90s",
}
"""Durations written another way, for the same length."""


def respelled(value: Any) -> Any:
    """``value`` with every duration in it written another way (see :data:`RESPELLINGS`)."""
    if isinstance(value, dict):
        return {k: respelled(v) for k, v in value.items()}
    if isinstance(value, list):
        return [respelled(v) for v in value]
    return RESPELLINGS.get(value, value) if isinstance(value, str) else value


@st.composite
def pair_of(
    draw: st.DrawFn, fields: st.SearchStrategy[dict[str, Any]]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Two draws of ``fields`` where the second keeps each field of the first with
    probability about 2/3 (so pairs are often alike, and often differ in one field), a kept
    field's durations written another way half the time."""
    first = draw(fields)
    fresh = draw(fields)
    second = {}
    for key, value in first.items():
        if draw(st.integers(0, 2)) == 0:
            second[key] = fresh[key]
        elif draw(st.booleans()):
            second[key] = respelled(value)
        else:
            second[key] = copy.deepcopy(value)
    for key in ("taints", "startupTaints"):
        if isinstance(second.get(key), list):
            second[key] = draw(st.permutations(second[key]))
    return first, second
