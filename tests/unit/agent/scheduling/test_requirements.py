"""Tests of Requirements: building and adding them, compatibility and its messages, pods."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from agent.api.kube import NodeSelectorRequirement
from agent.api.requirements import Requirement as ApiRequirement
from agent.scheduling.requirement import WELL_KNOWN_LABELS, Requirement
from agent.scheduling.requirements import (
    IncompatibleRequirements,
    KeyConflict,
    Requirements,
    pod_requirement_alternatives,
    preferred_node_affinity,
)
from tests.unit.agent.scheduling.helpers import expr, pod_spec, required_affinity
from tests.unit.agent.scheduling.strategies import UNIVERSE, exhausted, requirements

ZONE = "topology.kubernetes.io/zone"


def on(key: str, operator: str, *values: str) -> Requirements:
    """Requirements with one requirement."""
    return Requirements(Requirement(key, operator, values))


def sets_on(key: str) -> dict[str, Requirements]:
    """The requirement sets of the compatibility tables, on ``key``."""
    return {
        "U": Requirements(),
        "E": on(key, "Exists"),
        "D": on(key, "DoesNotExist"),
        "A": on(key, "In", "A"),
        "B": on(key, "In", "B"),
        "AB": on(key, "In", "A", "B"),
        "nA": on(key, "NotIn", "A"),
        "1": on(key, "In", "1"),
        "9": on(key, "In", "9"),
        "19": on(key, "In", "1", "9"),
        "n12": on(key, "NotIn", "1", "2"),
        "g1": on(key, "Gt", "1"),
        "g9": on(key, "Gt", "9"),
        "l1": on(key, "Lt", "1"),
        "l9": on(key, "Lt", "9"),
    }


COLUMNS = ["U", "E", "D", "A", "B", "AB", "nA", "1", "9", "19", "n12", "g1", "g9", "l1", "l9"]
# Row: the existing side (a node template); columns: the incoming side (a pod); 1 = compatible.
COMPATIBLE = {
    "E": "110111111111111",
    "D": "101000100010000",
    "A": "110101000010000",
    "B": "110011100010000",
    "AB": "110111100010000",
    "nA": "111011111111111",
    "1": "110000110100001",
    "9": "110000101111000",
    "19": "110000111111001",
    "n12": "111111101111111",
    "g1": "110000101111101",
    "g9": "110000100011100",
    "l1": "110000100010011",
    "l9": "110000110111011",
}
UNDEFINED_ALLOWED = "111111111111111"
UNDEFINED_STRICT = "101000100010000"


def _check_row(row: str, expected: str, key: str, allow: frozenset[str]) -> None:
    sets = sets_on(key)
    for column, want in zip(COLUMNS, expected, strict=True):
        error = sets[row].compatible(sets[column], allow)
        assert (error is None) == (want == "1"), f"{row} vs {column}: {error}"
        assert sets[row].is_compatible(sets[column], allow) == (want == "1")


@pytest.mark.parametrize("row", ["U", *COMPATIBLE])
def test_compatibility_with_well_known_labels_allowed_undefined(row: str) -> None:
    expected = UNDEFINED_ALLOWED if row == "U" else COMPATIBLE[row]
    _check_row(row, expected, ZONE, WELL_KNOWN_LABELS)


@pytest.mark.parametrize("row", ["U", *COMPATIBLE])
def test_strict_compatibility(row: str) -> None:
    expected = UNDEFINED_STRICT if row == "U" else COMPATIBLE[row]
    _check_row(row, expected, ZONE, frozenset())


def test_custom_labels_must_be_defined_even_when_well_known_ones_need_not() -> None:
    _check_row("U", UNDEFINED_STRICT, "example.com/team", WELL_KNOWN_LABELS)


def test_the_message_names_the_key_and_both_sides() -> None:
    template = on("karpenter.sh/capacity-type", "In", "on-demand")
    pod = on("karpenter.sh/capacity-type", "In", "spot")
    error = template.compatible(pod, WELL_KNOWN_LABELS)
    assert isinstance(error, IncompatibleRequirements)
    assert str(error) == (
        "incompatible requirements, key karpenter.sh/capacity-type, "
        "karpenter.sh/capacity-type In [spot] not in karpenter.sh/capacity-type In [on-demand]"
    )
    assert error.key == "karpenter.sh/capacity-type"
    assert error.conflicts == (
        KeyConflict(
            "karpenter.sh/capacity-type",
            pod["karpenter.sh/capacity-type"],
            template["karpenter.sh/capacity-type"],
        ),
    )


def test_every_conflicting_key_is_reported_in_key_order() -> None:
    template = Requirements(Requirement("z", "In", ["1"]), Requirement("a", "In", ["x"]))
    pod = Requirements(Requirement("a", "In", ["y"]), Requirement("z", "Gt", ["5"]))
    error = template.intersects(pod)
    assert error is not None
    assert [c.key for c in error.conflicts] == ["a", "z"]
    assert str(error) == (
        "incompatible requirements, key a, a In [y] not in a In [x]; "
        "key z, z Exists >=6 not in z In [1]"
    )


def test_an_empty_error_cannot_be_built() -> None:
    with pytest.raises(ValueError, match="at least one conflict"):
        IncompatibleRequirements([])


@pytest.mark.parametrize(
    ("label", "hint"),
    [
        ("zone", "topology.kubernetes.io/zone"),
        ("region", "topology.kubernetes.io/region"),
        ("nodepool", "karpenter.sh/nodepool"),
        ("instance-type", "node.kubernetes.io/instance-type"),
        ("arch", "kubernetes.io/arch"),
        ("capacity-type", "karpenter.sh/capacity-type"),
        ("topology.kubernetesio/zone", "topology.kubernetes.io/zone"),
        ("node.io/zone", "topology.kubernetes.io/zone"),
        ("topology.kubernetes.io/regio", "topology.kubernetes.io/region"),
        ("node.kubernetes.io/region", "topology.kubernetes.io/region"),
        ("karpenter/nodepool", "karpenter.sh/nodepool"),
        ("instance-family", "karpenter.k8s.aws/instance-family"),
    ],
)
def test_undefined_labels_get_a_typo_hint(label: str, hint: str) -> None:
    error = Requirements().compatible(on(label, "Exists"), WELL_KNOWN_LABELS)
    assert str(error) == (
        f'incompatible requirements, label "{label}" does not have known values (typo of "{hint}"?)'
    )


def test_hints_also_come_from_the_existing_keys_and_may_be_absent() -> None:
    assert str(Requirements().compatible(on("deployment", "Exists"))) == (
        'incompatible requirements, label "deployment" does not have known values'
    )
    existing = on("example.com/team", "In", "a")
    error = existing.compatible(on("team", "In", "a"))
    assert error is not None
    assert error.conflicts[0].hint == "example.com/team"
    assert error.conflicts[0].existing is None


def test_add_intersects_and_get_defaults_to_exists() -> None:
    reqs = Requirements(Requirement("k", "In", ["a", "b"]))
    reqs.add(Requirement("k", "NotIn", ["a"]), Requirement("j", "Exists"))
    assert reqs["k"] == Requirement("k", "In", ["b"])
    assert reqs.has("j")
    assert "j" in reqs
    assert not reqs.has("x")
    assert reqs.get("x") == Requirement("x", "Exists")
    assert sorted(reqs) == ["j", "k"]
    assert len(reqs) == 2
    assert sorted(reqs.keys()) == ["j", "k"]
    assert dict(reqs.items())["k"] in list(reqs.values())
    with pytest.raises(KeyError):
        reqs["x"]


def test_copy_is_independent() -> None:
    original = on("k", "In", "a", "b")
    copied = original.copy()
    copied.add(Requirement("k", "In", ["a"]))
    assert original == on("k", "In", "a", "b")
    assert copied == on("k", "In", "a")
    assert original != copied
    assert original != "k In [a b]"


def test_labels_are_the_single_valued_keys() -> None:
    reqs = Requirements(
        Requirement("a", "In", ["x"]),
        Requirement("b", "In", ["x", "y"]),
        Requirement("c", "NotIn", ["x"]),
        Requirement("d", "Exists"),
        Requirement("e", "DoesNotExist"),
        Requirement("f", "Gte", ["3"]),
    )
    assert reqs.labels() == {"a": "x"}


def test_from_labels_normalises_deprecated_keys() -> None:
    reqs = Requirements.from_labels(
        {"beta.kubernetes.io/arch": "amd64", "failure-domain.beta.kubernetes.io/zone": "z1"}
    )
    assert sorted(reqs) == ["kubernetes.io/arch", ZONE]
    assert reqs.get(ZONE).has("z1")
    assert not reqs.has("failure-domain.beta.kubernetes.io/zone")
    clash = Requirements.from_labels({"beta.kubernetes.io/os": "linux", "kubernetes.io/os": "win"})
    assert clash["kubernetes.io/os"].is_empty


def test_from_node_selector_requirements_reads_both_models() -> None:
    reqs = Requirements.from_node_selector_requirements(
        [
            ApiRequirement(key="karpenter.k8s.aws/instance-cpu", operator="Gte", values=["4"]),
            ApiRequirement(
                key="karpenter.k8s.aws/instance-family",
                operator="In",
                values=["m7i", "c7i"],
                min_values=2,
            ),
            NodeSelectorRequirement(
                key="karpenter.k8s.aws/instance-cpu", operator="Lt", values=["9"]
            ),
        ]
    )
    assert str(reqs) == (
        "karpenter.k8s.aws/instance-cpu Exists >=4 <=8, "
        "karpenter.k8s.aws/instance-family In [c7i m7i] minValues 2"
    )
    assert reqs.has_min_values()
    assert not Requirements().has_min_values()


def test_string_leaves_out_the_hostname() -> None:
    reqs = Requirements(
        Requirement("kubernetes.io/hostname", "In", ["h"]), Requirement("b", "Exists")
    )
    assert str(reqs) == "b Exists"
    assert repr(reqs) == "Requirements('b Exists')"


def test_node_selector_requirements_are_in_key_order() -> None:
    reqs = Requirements(Requirement("z", "In", ["1"]), Requirement("a", "Gt", ["1"]))
    assert [(r.key, r.operator) for r in reqs.node_selector_requirements()] == [
        ("a", "Gte"),
        ("z", "In"),
    ]


# Pods -----------------------------------------------------------------------------------------


def test_pod_requirements_use_the_node_selector_and_the_first_required_term() -> None:
    spec = pod_spec(
        nodeSelector={"beta.kubernetes.io/arch": "arm64"},
        affinity=required_affinity(
            [expr(ZONE, "In", "z1", "z2")],
            [expr(ZONE, "In", "z3")],
        ),
    )
    reqs = Requirements.from_pod(spec)
    assert reqs == Requirements(
        Requirement("kubernetes.io/arch", "In", ["arm64"]), Requirement(ZONE, "In", ["z1", "z2"])
    )
    alternatives = pod_requirement_alternatives(spec)
    assert alternatives == [
        reqs,
        Requirements(
            Requirement("kubernetes.io/arch", "In", ["arm64"]), Requirement(ZONE, "In", ["z3"])
        ),
    ]


def test_a_pod_without_node_affinity_has_one_alternative() -> None:
    spec = pod_spec(nodeSelector={"team": "a"})
    assert pod_requirement_alternatives(spec) == [on("team", "In", "a")]
    assert Requirements.from_pod(spec) == on("team", "In", "a")
    assert Requirements.from_pod(pod_spec()) == Requirements()
    assert preferred_node_affinity(spec) == []


def test_match_fields_are_not_label_requirements() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
                ]
            }
        }
    }
    assert Requirements.from_pod(pod_spec(affinity=affinity)) == Requirements()


def test_preferred_terms_come_heaviest_first_and_may_be_included() -> None:
    affinity = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 10, "preference": {"matchExpressions": [expr(ZONE, "In", "z1")]}},
                {"weight": 50, "preference": {"matchExpressions": [expr(ZONE, "In", "z2")]}},
                {"weight": 10, "preference": {"matchExpressions": [expr(ZONE, "In", "z3")]}},
            ]
        }
    }
    spec = pod_spec(affinity=affinity)
    preferred = preferred_node_affinity(spec)
    assert [(p.weight, str(p.requirements)) for p in preferred] == [
        (50, f"{ZONE} In [z2]"),
        (10, f"{ZONE} In [z1]"),
        (10, f"{ZONE} In [z3]"),
    ]
    assert Requirements.from_pod(spec) == Requirements()
    assert Requirements.from_pod(spec, include_preferred=True) == on(ZONE, "In", "z2")


# Property tests -------------------------------------------------------------------------------

KEYS = ["k1", "k2", "k3"]


@st.composite
def requirement_sets(draw: st.DrawFn) -> Requirements:
    """Requirements on a random subset of KEYS."""
    keys = draw(st.lists(st.sampled_from(KEYS), unique=True))
    return Requirements(*(draw(requirements(key)) for key in keys))


def _absent_ok(requirement: Requirement) -> bool:
    return requirement.operator() in ("NotIn", "DoesNotExist")


def brute_force_compatible(
    existing: Requirements, incoming: Requirements, allow: frozenset[str]
) -> bool:
    """Is there a labelling (each key: a value of the universe, or absent) both sides accept?

    A side that does not define a key leaves it absent, unless the key may be undefined, in
    which case anything goes; a requirement accepts absence when it is NotIn or DoesNotExist.
    """
    for key, wanted in incoming.items():
        if key not in existing:
            if key not in allow and not _absent_ok(wanted):
                return False
            continue
        offered = existing[key]
        if not (_absent_ok(offered) and _absent_ok(wanted)) and not any(
            offered.has(v) and wanted.has(v) for v in UNIVERSE
        ):
            return False
    return True


@given(requirement_sets(), requirement_sets(), st.sets(st.sampled_from(KEYS)))
def test_compatible_agrees_with_a_brute_force_check(
    existing: Requirements, incoming: Requirements, allow: set[str]
) -> None:
    assume(not any(exhausted(existing[k], incoming[k]) for k in incoming if k in existing))
    expected = brute_force_compatible(existing, incoming, frozenset(allow))
    assert (existing.compatible(incoming, frozenset(allow)) is None) == expected
    assert existing.is_compatible(incoming, frozenset(allow)) == expected


@given(requirement_sets(), requirement_sets())
def test_add_is_order_independent(a: Requirements, b: Requirements) -> None:
    left = a.copy()
    left.add(*b.values())
    right = b.copy()
    right.add(*a.values())
    assert left == right


@given(requirement_sets())
def test_node_selector_requirements_round_trip(reqs: Requirements) -> None:
    assert Requirements.from_node_selector_requirements(reqs.node_selector_requirements()) == reqs
