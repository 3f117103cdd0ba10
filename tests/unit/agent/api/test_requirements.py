"""Requirements and taints of a NodePool's template, with Karpenter v1's rules, and
``requirement_allows`` against a reference implementation of node-selector semantics."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent.api.requirements import Requirement, requirement_allows
from common.kubemodel import parse_manifest

from .helpers import (
    REQS,
    TEMPLATE,
    nodepool,
    nodepool_with_requirements,
    pool_ok,
    pool_refused,
    requirement,
    with_field,
)

# Karpenter AWS provider v1: the karpenter.k8s.aws labels its NodePool CRD admits (Karpenter's
# runtime validation then refuses the node class label: see test_labels.py).
AWS_WELL_KNOWN = [
    "karpenter.k8s.aws/instance-tenancy",
    "karpenter.k8s.aws/capacity-reservation-type",
    "karpenter.k8s.aws/capacity-reservation-id",
    "karpenter.k8s.aws/capacity-reservation-interruptible",
    "karpenter.k8s.aws/ec2nodeclass",
    "karpenter.k8s.aws/instance-encryption-in-transit-supported",
    "karpenter.k8s.aws/instance-category",
    "karpenter.k8s.aws/instance-hypervisor",
    "karpenter.k8s.aws/instance-family",
    "karpenter.k8s.aws/instance-generation",
    "karpenter.k8s.aws/instance-local-nvme",
    "karpenter.k8s.aws/instance-size",
    "karpenter.k8s.aws/instance-cpu",
    "karpenter.k8s.aws/instance-cpu-manufacturer",
    "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz",
    "karpenter.k8s.aws/instance-memory",
    "karpenter.k8s.aws/instance-ebs-bandwidth",
    "karpenter.k8s.aws/instance-network-bandwidth",
    "karpenter.k8s.aws/instance-gpu-name",
    "karpenter.k8s.aws/instance-gpu-manufacturer",
    "karpenter.k8s.aws/instance-gpu-count",
    "karpenter.k8s.aws/instance-gpu-memory",
    "karpenter.k8s.aws/instance-accelerator-name",
    "karpenter.k8s.aws/instance-accelerator-manufacturer",
    "karpenter.k8s.aws/instance-accelerator-count",
    "karpenter.k8s.aws/instance-capability-flex",
    "karpenter.k8s.aws/placement-group-id",
    "karpenter.k8s.aws/placement-group-partition",
]

NUMERIC = ["Gt", "Lt", "Gte", "Lte"]
SINGLE_INT = "must have a single positive integer value"
KEY_316 = "a" * 252 + "/" + "b" * 63
KEY_317 = "a" * 253 + "/" + "b" * 63


# --- operators -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "req",
    [
        requirement("kubernetes.io/arch", "In", "amd64", "arm64"),
        requirement("kubernetes.io/arch", "NotIn", "arm64"),
        requirement("example.com/team", "NotIn"),
        requirement("example.com/team", "Exists"),
        requirement("example.com/team", "DoesNotExist"),
        requirement("karpenter.k8s.aws/instance-generation", "Gt", "2"),
        requirement("karpenter.k8s.aws/instance-cpu", "Lt", "65"),
        requirement("karpenter.k8s.aws/instance-cpu", "Gte", "0"),
        requirement("karpenter.k8s.aws/instance-memory", "Lte", "16384"),
    ],
    ids=lambda r: f"{r['operator']}-{len(r.get('values', []))}",
)
def test_each_operator_in_its_valid_form_is_accepted(req: dict[str, Any]) -> None:
    pool = pool_ok(nodepool_with_requirements(req))
    parsed = pool.spec.template.spec.requirements[0]
    assert (parsed.operator, parsed.values) == (req["operator"], req.get("values"))


@pytest.mark.parametrize("operator", ["Equals", "in", "NOTIN", "", "Gteq", "NotExists"])
def test_an_unknown_operator_is_refused(operator: str) -> None:
    data = nodepool_with_requirements(requirement("kubernetes.io/arch", operator, "amd64"))
    issue = pool_refused(data, f"{REQS}[0].operator", "must be one of")
    for known in (
        "'In'",
        "'NotIn'",
        "'Exists'",
        "'DoesNotExist'",
        "'Gt'",
        "'Lt'",
        "'Gte'",
        "'Lte'",
    ):
        assert known in issue.message


@pytest.mark.parametrize("values", [None, []], ids=["absent", "empty"])
def test_in_without_values_is_refused(values: list[str] | None) -> None:
    req = requirement("kubernetes.io/arch", "In")
    if values is not None:
        req["values"] = values
    pool_refused(
        nodepool_with_requirements(req), f"{REQS}[0].values", "operator 'In' must have a value"
    )


def test_in_with_one_value_is_accepted() -> None:
    pool_ok(nodepool_with_requirements(requirement("kubernetes.io/os", "In", "linux")))


@pytest.mark.parametrize("operator", NUMERIC)
@pytest.mark.parametrize("value", ["0", "2", "007", "4294967296"])
def test_numeric_operators_take_one_non_negative_integer(operator: str, value: str) -> None:
    data = nodepool_with_requirements(
        requirement("karpenter.k8s.aws/instance-cpu", operator, value)
    )
    assert pool_ok(data).spec.template.spec.requirements[0].values == [value]


@pytest.mark.parametrize("operator", NUMERIC)
@pytest.mark.parametrize(
    "values",
    [None, [], ["1", "2"], ["abc"], ["1.5"], [""], ["1e3"], ["0x10"]],
    ids=["absent", "empty", "two", "word", "decimal", "blank", "exponent", "hex"],
)
def test_numeric_operators_refuse_anything_but_one_non_negative_integer(
    operator: str, values: list[str] | None
) -> None:
    req = requirement("karpenter.k8s.aws/instance-cpu", operator)
    if values is not None:
        req["values"] = values
    pool_refused(nodepool_with_requirements(req), f"{REQS}[0].values", SINGLE_INT, operator)


@pytest.mark.parametrize("operator", NUMERIC)
@pytest.mark.parametrize("value", ["-1", "+3"])
def test_signed_numeric_values_are_refused_as_label_values(operator: str, value: str) -> None:
    # Karpenter's CEL rule refuses -1 as negative; both are also invalid label values, which is
    # the rule the model reports first.
    req = requirement("karpenter.k8s.aws/instance-cpu", operator, value)
    pool_refused(nodepool_with_requirements(req), f"{REQS}[0].values", "label value")


# Karpenter's CEL rule converts the value with int(), which fails beyond int64 (2^63-1).
def test_numeric_operator_value_beyond_int64_is_refused() -> None:
    data = nodepool_with_requirements(
        requirement("karpenter.k8s.aws/instance-cpu", "Gt", "9223372036854775808")
    )
    pool_refused(data, f"{REQS}[0].values", SINGLE_INT)


# --- minValues -------------------------------------------------------------------------------


@pytest.mark.parametrize(("min_values", "count"), [(1, 1), (2, 2), (2, 5), (50, 50)], ids=str)
def test_min_values_within_range_and_values_is_accepted(min_values: int, count: int) -> None:
    values = [f"m{i}.large" for i in range(count)]
    req = requirement("node.kubernetes.io/instance-type", "In", *values, minValues=min_values)
    pool = pool_ok(nodepool_with_requirements(req))
    assert pool.spec.template.spec.requirements[0].min_values == min_values


@pytest.mark.parametrize(
    ("min_values", "fragment"),
    [(0, "must be at least 1"), (-1, "must be at least 1"), (51, "must be at most 50")],
)
def test_min_values_out_of_range_is_refused(min_values: int, fragment: str) -> None:
    req = requirement("kubernetes.io/arch", "In", "amd64", minValues=min_values)
    pool_refused(nodepool_with_requirements(req), f"{REQS}[0].minValues", fragment)


def test_min_values_above_the_number_of_in_values_is_refused() -> None:
    req = requirement(
        "node.kubernetes.io/instance-type", "In", "m5.large", "m6i.large", minValues=3
    )
    issue = pool_refused(
        nodepool_with_requirements(req),
        f"{REQS}[0].minValues",
        "must have at least that many values specified in the 'values' field",
    )
    assert "minValues is 3 but only 2" in issue.message


@pytest.mark.parametrize("operator", ["Exists", "NotIn"])
def test_min_values_count_rule_applies_only_to_in(operator: str) -> None:
    values = ("arm64",) if operator == "NotIn" else ()
    req = requirement("kubernetes.io/arch", operator, *values, minValues=3)
    pool_ok(nodepool_with_requirements(req))


def test_min_values_must_be_an_integer() -> None:
    req = requirement("kubernetes.io/arch", "In", "amd64", minValues="1")
    pool_refused(nodepool_with_requirements(req), f"{REQS}[0].minValues", "must be an integer")


# --- how many requirements -------------------------------------------------------------------


def test_one_hundred_requirements_are_accepted() -> None:
    reqs = [requirement(f"example.com/label-{i}", "Exists") for i in range(100)]
    assert len(pool_ok(nodepool_with_requirements(*reqs)).spec.template.spec.requirements) == 100


def test_more_than_one_hundred_requirements_are_refused() -> None:
    reqs = [requirement(f"example.com/label-{i}", "Exists") for i in range(101)]
    pool_refused(nodepool_with_requirements(*reqs), REQS, "at most 100")


def test_requirements_are_required() -> None:
    data = nodepool()
    del data["spec"]["template"]["spec"]["requirements"]
    pool_refused(data, REQS, "required field is missing")


# --- keys ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        "team",
        "example.com/team",
        "sub.example.com/Team_Name.v2",
        "a",
        "x" * 63,
        KEY_316,
        "kubernetes.io/arch",
        "kubernetes.io/os",
        "node.kubernetes.io/instance-type",
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "topology.k8s.aws/zone-id",
        "karpenter.sh/capacity-type",
        "example.com/karpenter.sh",
        *(key for key in AWS_WELL_KNOWN if key != "karpenter.k8s.aws/ec2nodeclass"),
    ],
)
def test_valid_and_well_known_keys_are_accepted(key: str) -> None:
    pool_ok(nodepool_with_requirements(requirement(key, "Exists")))


def test_key_of_317_characters_is_refused() -> None:
    pool_refused(
        nodepool_with_requirements(requirement(KEY_317, "Exists")),
        f"{REQS}[0].key",
        "at most 316 characters",
    )


@pytest.mark.parametrize(
    ("key", "fragment"),
    [
        ("", "name part ''"),
        ("-team", "name part '-team'"),
        ("team-", "name part 'team-'"),
        ("team name", "name part 'team name'"),
        ("x" * 64, "1-63 characters"),
        ("/team", "empty prefix"),
        ("Example.com/team", "must be a DNS subdomain"),
        ("example_com/team", "must be a DNS subdomain"),
        ("a/b/c", "must be a DNS subdomain"),
        ("example.com/", "name part ''"),
    ],
)
def test_key_that_is_not_a_qualified_name_is_refused(key: str, fragment: str) -> None:
    pool_refused(nodepool_with_requirements(requirement(key, "Exists")), f"{REQS}[0].key", fragment)


@pytest.mark.parametrize(
    ("key", "fragment"),
    [
        ("karpenter.sh/nodepool", 'label "karpenter.sh/nodepool" is restricted'),
        ("kubernetes.io/hostname", 'label "kubernetes.io/hostname" is restricted'),
        ("karpenter.sh/custom", 'label domain "karpenter.sh" is restricted'),
        ("karpenter.sh/initialized", 'label domain "karpenter.sh" is restricted'),
        ("team.karpenter.sh/custom", 'label domain "karpenter.sh" is restricted'),
        ("karpenter.k8s.aws/custom", 'label domain "karpenter.k8s.aws" is restricted'),
        ("karpenter.k8s.aws/instance-type", 'label domain "karpenter.k8s.aws" is restricted'),
        ("x.karpenter.k8s.aws/instance-family", 'label domain "karpenter.k8s.aws" is restricted'),
    ],
)
def test_restricted_keys_are_refused(key: str, fragment: str) -> None:
    pool_refused(nodepool_with_requirements(requirement(key, "Exists")), f"{REQS}[0].key", fragment)


# Karpenter's CEL rule takes the domain as self.find('^([^/]+)'): the whole key without '/'.
@pytest.mark.parametrize("key", ["karpenter.sh", "team.karpenter.sh", "karpenter.k8s.aws"])
def test_bare_key_ending_in_a_restricted_domain_is_refused(key: str) -> None:
    pool_refused(
        nodepool_with_requirements(requirement(key, "Exists")), f"{REQS}[0].key", "is restricted"
    )


# --- values ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    ["amd64", "A", "1", "a.b_c-d", "x" * 63, ""],
    ids=["word", "A", "1", "mixed", "63", "empty"],
)
def test_valid_label_values_are_accepted(value: str) -> None:
    pool_ok(nodepool_with_requirements(requirement("example.com/team", "In", value)))


@pytest.mark.parametrize("value", ["-amd64", "amd64-", "has space", "a/b", "x" * 64, "é"], ids=str)
def test_invalid_label_values_are_refused(value: str) -> None:
    data = nodepool_with_requirements(requirement("example.com/team", "In", "ok", value))
    pool_refused(data, f"{REQS}[0].values", "label value", "at most 63 characters")


def test_values_must_be_a_list_of_strings() -> None:
    req: dict[str, Any] = {"key": "kubernetes.io/arch", "operator": "In", "values": "amd64"}
    pool_refused(nodepool_with_requirements(req), f"{REQS}[0].values", "must be a list")
    req["values"] = [1]
    pool_refused(nodepool_with_requirements(req), f"{REQS}[0].values[0]", "must be a string")


@pytest.mark.parametrize("missing", ["key", "operator"])
def test_key_and_operator_are_required(missing: str) -> None:
    req = requirement("kubernetes.io/arch", "In", "amd64")
    del req[missing]
    pool_refused(nodepool_with_requirements(req), f"{REQS}[0].{missing}", "required")


def test_unknown_requirement_field_is_refused() -> None:
    req = requirement("kubernetes.io/arch", "In", "amd64", minValue=1)
    pool_refused(nodepool_with_requirements(req), f"{REQS}[0].minValue", "unknown field")


def test_issue_names_the_index_of_the_broken_requirement() -> None:
    data = nodepool_with_requirements(
        requirement("kubernetes.io/arch", "In", "amd64"),
        requirement("kubernetes.io/os", "In", "linux"),
        requirement("karpenter.k8s.aws/instance-cpu", "Gt"),
    )
    pool_refused(data, f"{REQS}[2].values", SINGLE_INT)


# CRD patterns are Go regexps: '$' matches only at the very end, not before a trailing newline.
@pytest.mark.parametrize(
    ("req", "field"),
    [
        (requirement("kubernetes.io/arch\n", "Exists"), "key"),
        (requirement("kubernetes.io/arch", "In", "amd64\n"), "values"),
    ],
    ids=["key", "value"],
)
def test_trailing_newline_in_key_or_value_is_refused(req: dict[str, Any], field: str) -> None:
    fragment = "name part" if field == "key" else "label value"
    pool_refused(nodepool_with_requirements(req), f"{REQS}[0].{field}", fragment)


# --- well-known values (Karpenter's runtime validation: the NodePool is never Ready) ----------

KNOWN = "(rule: Karpenter marks a NodePool whose requirements name no valid well-known value"


@pytest.mark.parametrize(
    ("key", "values", "expected"),
    [
        ("karpenter.sh/capacity-type", ["spotty"], "on-demand, reserved, spot"),
        ("karpenter.sh/capacity-type", ["spott", "ondemand"], "on-demand, reserved, spot"),
        ("karpenter.k8s.aws/instance-tenancy", ["host"], "dedicated, default"),
    ],
)
def test_well_known_requirement_with_no_known_value_is_refused(
    key: str, values: list[str], expected: str
) -> None:
    data = nodepool_with_requirements(requirement(key, "In", *values))
    pool_refused(data, f"{REQS}[0].values", KNOWN, f"expected one of {expected}", "0 valid")


def test_well_known_requirement_with_fewer_known_values_than_min_values_is_refused() -> None:
    req = requirement("karpenter.sh/capacity-type", "In", "spot", "spotty", minValues=2)
    pool_refused(nodepool_with_requirements(req), f"{REQS}[0].values", KNOWN, "1 valid")


@pytest.mark.parametrize(
    "req",
    [
        requirement("karpenter.sh/capacity-type", "In", "spot"),
        requirement("karpenter.sh/capacity-type", "In", "on-demand", "reserved", minValues=2),
        requirement("karpenter.sh/capacity-type", "In", "spot", "preemptible"),
        requirement("karpenter.sh/capacity-type", "NotIn", "spotty"),
        requirement("karpenter.k8s.aws/instance-tenancy", "In", "default"),
        requirement("karpenter.k8s.aws/instance-tenancy", "In", "dedicated"),
        requirement("kubernetes.io/arch", "In", "riscv64"),
    ],
    ids=["spot", "min-values", "one-unknown", "not-in", "default", "dedicated", "other-key"],
)
def test_well_known_requirement_with_a_known_value_is_accepted(req: dict[str, Any]) -> None:
    pool_ok(nodepool_with_requirements(req))


# --- taints ----------------------------------------------------------------------------------


def taint(key: str, effect: str | None = "NoSchedule", **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key}
    if effect is not None:
        out["effect"] = effect
    out.update(extra)
    return out


@pytest.mark.parametrize("field", ["taints", "startupTaints"])
@pytest.mark.parametrize(
    "item",
    [
        taint("dedicated"),
        taint("example.com/dedicated", "PreferNoSchedule", value="gpu"),
        taint("example.com/dedicated", "NoExecute", value="team.a_b-c"),
        taint("node.cilium.io/agent-not-ready", timeAdded="2024-08-07T10:00:00Z"),
        taint("k" * 63, value="v" * 63),
    ],
    ids=["plain", "prefer", "noexecute", "timeAdded", "long"],
)
def test_valid_taints_are_accepted(field: str, item: dict[str, Any]) -> None:
    pool = pool_ok(with_field(nodepool(), f"{TEMPLATE}.{field}", [item]))
    spec = pool.spec.template.spec
    parsed = (spec.taints if field == "taints" else spec.startup_taints) or []
    assert (parsed[0].key, parsed[0].effect) == (item["key"], item["effect"])


@pytest.mark.parametrize("field", ["taints", "startupTaints"])
@pytest.mark.parametrize(
    ("item", "sub", "fragment"),
    [
        (taint("dedicated", None), "effect", "required field is missing"),
        (taint("dedicated", "NoScheduled"), "effect", "must be one of"),
        (taint("dedicated", ""), "effect", "must be one of"),
        ({"effect": "NoSchedule"}, "key", "required field is missing"),
        (taint(""), "key", "at least 1 characters"),
        (taint("has space"), "key", "is not a qualified name"),
        (taint("-dedicated"), "key", "is not a qualified name"),
        (taint("Example.com/dedicated"), "key", "is not a qualified name"),
        (taint("dedicated", value="has space"), "value", "is not a qualified name"),
        (taint("dedicated", value=""), "value", "is not a qualified name"),
        (taint("dedicated", value=3), "value", "must be a string"),
        (taint("dedicated", Effect="NoSchedule"), "Effect", "unknown field"),
    ],
)
def test_invalid_taints_are_refused(
    field: str, item: dict[str, Any], sub: str, fragment: str
) -> None:
    data = with_field(nodepool(), f"{TEMPLATE}.{field}", [item])
    pool_refused(data, f"{TEMPLATE}.{field}[0].{sub}", fragment)


def test_effect_lists_the_three_effects() -> None:
    data = with_field(nodepool(), f"{TEMPLATE}.taints", [taint("a", "Evict")])
    issue = pool_refused(data, f"{TEMPLATE}.taints[0].effect")
    for effect in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
        assert effect in issue.message


def test_same_key_with_different_effects_is_accepted() -> None:
    data = with_field(nodepool(), f"{TEMPLATE}.taints", [taint("a"), taint("a", "NoExecute")])
    data = with_field(data, f"{TEMPLATE}.startupTaints", [taint("a", "PreferNoSchedule")])
    pool_ok(data)


def test_duplicate_taint_within_taints_is_refused() -> None:
    data = with_field(
        nodepool(), f"{TEMPLATE}.taints", [taint("a"), taint("b"), taint("a", value="other")]
    )
    pool_refused(
        data,
        f"{TEMPLATE}.taints[2]",
        "duplicate taint a:NoSchedule",
        "may appear once across taints and startupTaints",
    )


def test_duplicate_taint_across_taints_and_startup_taints_is_refused() -> None:
    data = with_field(nodepool(), f"{TEMPLATE}.taints", [taint("a", "NoExecute")])
    data = with_field(data, f"{TEMPLATE}.startupTaints", [taint("b"), taint("a", "NoExecute")])
    pool_refused(data, f"{TEMPLATE}.startupTaints[1]", "duplicate taint a:NoExecute")


def test_duplicate_within_startup_taints_is_refused() -> None:
    data = with_field(nodepool(), f"{TEMPLATE}.startupTaints", [taint("a"), taint("a")])
    pool_refused(data, f"{TEMPLATE}.startupTaints[1]", "duplicate taint a:NoSchedule")


# Karpenter's runtime validation checks taint keys with IsQualifiedName (name part <= 63).
def test_taint_key_with_a_name_longer_than_63_is_refused() -> None:
    data = with_field(nodepool(), f"{TEMPLATE}.taints", [taint("k" * 64)])
    pool_refused(data, f"{TEMPLATE}.taints[0].key", "63")


# The CRD declares timeAdded with format date-time, which the API server checks (kube-openapi's
# IsDateTime: a date, 'T', HH:MM:SS, optional fraction, and 'Z' or an offset +hh:mm).
@pytest.mark.parametrize(
    "value", ["2024-08-07T10:00:00Z", "2024-08-07T10:00:00.123Z", "2024-08-07T10:00:00+02:00"]
)
def test_taint_time_added_as_an_rfc3339_date_time_is_accepted(value: str) -> None:
    pool_ok(with_field(nodepool(), f"{TEMPLATE}.taints", [taint("a", timeAdded=value)]))


@pytest.mark.parametrize("value", ["yesterday", "2024-08-07", "2024-08-07 10:00:00Z", "10:00:00Z"])
def test_taint_time_added_must_be_a_date_time(value: str) -> None:
    data = with_field(nodepool(), f"{TEMPLATE}.taints", [taint("a", timeAdded=value)])
    pool_refused(data, f"{TEMPLATE}.taints[0].timeAdded", "date-time")


@pytest.mark.parametrize(
    "value",
    [
        "2024-08-07T10:00:00",
        "2024-08-07T10:00Z",
        "2024-08-07T10:00:00+0000",
        "2024-08-07T10:00:00+02",
        "20240807T100000Z",
    ],
    ids=["no-zone", "no-seconds", "offset-without-colon", "offset-hours", "basic-format"],
)
def test_taint_time_added_without_seconds_or_zone_is_refused(value: str) -> None:
    data = with_field(nodepool(), f"{TEMPLATE}.taints", [taint("a", timeAdded=value)])
    pool_refused(data, f"{TEMPLATE}.taints[0].timeAdded", "date-time")


# --- requirement_allows ----------------------------------------------------------------------


def parsed_requirement(operator: str, values: list[str] | None) -> Requirement:
    data: dict[str, Any] = {"key": "example.com/n", "operator": operator}
    if values is not None:
        data["values"] = values
    return parse_manifest(Requirement, data)


@pytest.mark.parametrize(
    ("operator", "values", "label", "expected"),
    [
        ("In", ["a", "b"], "a", True),
        ("In", ["a", "b"], "c", False),
        ("In", ["a"], None, False),
        ("NotIn", ["a"], "a", False),
        ("NotIn", ["a"], "b", True),
        ("NotIn", ["a"], None, True),
        ("Exists", None, "", True),
        ("Exists", None, None, False),
        ("DoesNotExist", None, None, True),
        ("DoesNotExist", None, "x", False),
        ("Gt", ["2"], "3", True),
        ("Gt", ["2"], "2", False),
        ("Gte", ["2"], "2", True),
        ("Gte", ["2"], "1", False),
        ("Lt", ["10"], "9", True),
        ("Lt", ["10"], "10", False),
        ("Lte", ["10"], "10", True),
        ("Lte", ["10"], "11", False),
        ("Gt", ["2"], None, False),
        ("Gt", ["2"], "abc", False),
        ("Lt", ["10"], "", False),
        ("Gt", ["2"], "010", True),
    ],
)
def test_requirement_allows_table(
    operator: str, values: list[str] | None, label: str | None, expected: bool
) -> None:
    assert requirement_allows(parsed_requirement(operator, values), label) is expected


def reference_allows(operator: str, values: list[str], label: str | None) -> bool:
    """Kubernetes node-selector semantics, written independently of the model."""
    if operator in ("Exists", "DoesNotExist"):
        return (label is not None) == (operator == "Exists")
    if operator in ("In", "NotIn"):
        found = label is not None and any(label == v for v in values)
        return found if operator == "In" else not found
    if label is None or not (label.isascii() and label.isdigit()):
        return False
    number, bound = int(label), int(values[0])
    if operator == "Gt":
        return number > bound
    if operator == "Gte":
        return number >= bound
    if operator == "Lt":
        return number < bound
    assert operator == "Lte", operator
    return number <= bound


SMALL_LABELS = st.one_of(
    st.none(),
    st.sampled_from(["", "a", "b", "amd64", "arm64", "x1", "1a", "-1"]),
    st.integers(min_value=0, max_value=200).map(str),
    st.integers(min_value=0, max_value=200).map(lambda n: f"0{n}"),
)


@given(
    data=st.one_of(
        st.tuples(
            st.sampled_from(["In", "NotIn"]),
            st.lists(st.sampled_from(["a", "b", "amd64", "5", "17"]), min_size=1, max_size=4),
        ),
        st.tuples(st.sampled_from(["Exists", "DoesNotExist"]), st.just([])),
        st.tuples(
            st.sampled_from(NUMERIC),
            st.integers(min_value=0, max_value=200).map(lambda n: [str(n)]),
        ),
    ),
    label=SMALL_LABELS,
)
def test_requirement_allows_matches_the_reference(
    data: tuple[str, list[str]], label: str | None
) -> None:
    operator, values = data
    req = parsed_requirement(operator, values or None)
    assert requirement_allows(req, label) is reference_allows(operator, values, label)
