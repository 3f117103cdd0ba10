"""Tolerations, affinity and topology spread constraints: the API server's rules on them."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent.api.kube import Pod, Toleration
from common.kubemodel import parse_manifest

from .helpers import only_issue, pod, pod_issue, pod_ok

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


# ---- tolerations ---------------------------------------------------------------------------


def test_a_toleration_defaults_to_operator_equal_without_writing_it() -> None:
    data = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    parsed = pod_ok(tolerations=[data])
    assert parsed.spec.tolerations[0].operator == "Equal"
    assert "operator" not in parsed.to_manifest()["spec"]["tolerations"][0]


@pytest.mark.parametrize(
    "toleration",
    [
        {"key": "dedicated", "operator": "Exists"},
        {"key": "dedicated", "operator": "Exists", "value": ""},
        {"operator": "Exists"},
        {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": ""},
        {"key": "spot", "value": "true", "effect": "PreferNoSchedule"},
    ],
)
def test_valid_tolerations_are_accepted(toleration: dict[str, Any]) -> None:
    assert pod_ok(tolerations=[toleration]).spec.tolerations[0].to_manifest() == toleration


def test_operator_exists_with_a_value_is_refused() -> None:
    issue = pod_issue(tolerations=[{"key": "dedicated", "operator": "Exists", "value": "gpu"}])
    assert issue.path == "spec.tolerations[0].value"
    assert issue.message == (
        "operator Exists must not have a value "
        "(rule: a toleration with operator Exists matches any value)"
    )


@pytest.mark.parametrize(("field", "value"), [("operator", "In"), ("effect", "NoRun")])
def test_unknown_operators_and_effects_are_refused(field: str, value: str) -> None:
    issue = pod_issue(tolerations=[{"key": "dedicated", "value": "x", field: value}])
    assert issue.path == f"spec.tolerations[0].{field}"
    assert issue.message.startswith("unsupported value: must be one of")


@pytest.mark.parametrize("toleration", [{"value": "x"}, {"key": "", "operator": "Equal"}])
def test_an_empty_key_needs_operator_exists(toleration: dict[str, Any]) -> None:
    issue = pod_issue(tolerations=[toleration])
    assert issue.path == "spec.tolerations[0].operator"
    assert "needs operator Exists" in issue.message


def test_toleration_seconds_with_no_execute_is_accepted() -> None:
    data = {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    }
    assert pod_ok(tolerations=[data]).spec.tolerations[0].toleration_seconds == 300


@pytest.mark.parametrize("effect", [None, "NoSchedule", "PreferNoSchedule", ""])
def test_toleration_seconds_without_no_execute_is_refused(effect: str | None) -> None:
    data: dict[str, Any] = {"key": "k", "operator": "Exists", "tolerationSeconds": 60}
    if effect is not None:
        data["effect"] = effect
    issue = pod_issue(tolerations=[data])
    assert issue.path == "spec.tolerations[0].tolerationSeconds"
    assert "not NoExecute" in issue.message


@given(
    key=st.sampled_from(["dedicated", "nvidia.com/gpu", "karpenter.sh/disrupted"]),
    operator=st.sampled_from(["Exists", "Equal", None]),
    value=st.sampled_from(["", "a", None]),
    effect=st.sampled_from(["NoSchedule", "PreferNoSchedule", "NoExecute", "", None]),
    seconds=st.one_of(st.none(), st.integers(0, 3600)),
)
def test_tolerations_are_accepted_exactly_when_the_rules_hold(
    key: str, operator: str | None, value: str | None, effect: str | None, seconds: int | None
) -> None:
    fields = {"operator": operator, "value": value, "effect": effect, "tolerationSeconds": seconds}
    data: dict[str, Any] = {"key": key, **{k: v for k, v in fields.items() if v is not None}}
    valid = not (operator == "Exists" and value) and (seconds is None or effect == "NoExecute")
    if valid:
        assert parse_manifest(Toleration, data).to_manifest() == data
    else:
        assert only_issue(Toleration, data).path in ("value", "tolerationSeconds")


# ---- affinity ------------------------------------------------------------------------------


def _term(**fields: Any) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": HOSTNAME, **fields}


def _preferred_node(weight: int) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["us-west-2a"]}]}
    preferred = [{"weight": weight, "preference": term}]
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}}


def _preferred_pod(weight: int, kind: str = "podAntiAffinity") -> dict[str, Any]:
    preferred = [{"weight": weight, "podAffinityTerm": _term()}]
    return {kind: {"preferredDuringSchedulingIgnoredDuringExecution": preferred}}


@pytest.mark.parametrize("weight", [1, 50, 100])
def test_preference_weights_from_1_to_100_are_accepted(weight: int) -> None:
    assert pod_ok(affinity=_preferred_node(weight)).spec.affinity is not None
    assert pod_ok(affinity=_preferred_pod(weight, "podAffinity")).spec.affinity is not None
    assert pod_ok(affinity=_preferred_pod(weight)).spec.affinity is not None


@pytest.mark.parametrize("weight", [0, 101, -5])
def test_preference_weights_outside_1_to_100_are_refused(weight: int) -> None:
    node = pod_issue(affinity=_preferred_node(weight))
    assert node.path == (
        "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight"
    )
    assert "out of range" in node.message
    for kind in ("podAffinity", "podAntiAffinity"):
        issue = pod_issue(affinity=_preferred_pod(weight, kind))
        assert issue.path == (
            f"spec.affinity.{kind}.preferredDuringSchedulingIgnoredDuringExecution[0].weight"
        )


def _required(term: dict[str, Any], kind: str = "podAntiAffinity") -> dict[str, Any]:
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


_REQUIRED_PATH = "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"


def test_a_pod_affinity_term_with_every_field_is_accepted() -> None:
    term = _term(
        namespaces=["default"],
        namespaceSelector={"matchLabels": {"team": "a"}},
        matchLabelKeys=["pod-template-hash"],
        mismatchLabelKeys=["tenant"],
    )
    parsed = pod_ok(affinity=_required(term, "podAffinity"))
    assert parsed.spec.affinity is not None
    assert parsed.spec.affinity.pod_affinity is not None
    got = parsed.spec.affinity.pod_affinity.required_during_scheduling_ignored_during_execution
    assert got[0].match_label_keys == ["pod-template-hash"]
    assert got[0].topology_key == HOSTNAME


@pytest.mark.parametrize(
    ("term", "message"),
    [
        ({"labelSelector": {}}, "required field is missing"),
        ({"labelSelector": {}, "topologyKey": ""}, "is empty (rule: must not be empty)"),
    ],
)
def test_a_pod_affinity_term_needs_a_topology_key(term: dict[str, Any], message: str) -> None:
    issue = pod_issue(affinity=_required(term))
    assert issue.path == f"{_REQUIRED_PATH}.topologyKey"
    assert issue.message == message


@pytest.mark.parametrize("field", ["matchLabelKeys", "mismatchLabelKeys"])
def test_label_keys_need_a_label_selector(field: str) -> None:
    issue = pod_issue(affinity=_required({"topologyKey": HOSTNAME, field: ["tenant"]}))
    assert issue.path == f"{_REQUIRED_PATH}.{field}"
    assert "without a labelSelector" in issue.message


def test_a_key_cannot_be_in_both_match_and_mismatch_label_keys() -> None:
    term = _term(matchLabelKeys=["a", "tenant"], mismatchLabelKeys=["tenant"])
    issue = pod_issue(affinity=_required(term))
    assert issue.path == f"{_REQUIRED_PATH}.matchLabelKeys[1]"
    assert "'tenant' is in both" in issue.message


# ---- topology spread -----------------------------------------------------------------------


def _spread(**fields: Any) -> dict[str, Any]:
    return {
        "maxSkew": 1,
        "topologyKey": ZONE,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
        **fields,
    }


def test_a_full_topology_spread_constraint_is_accepted() -> None:
    data = _spread(
        minDomains=3,
        nodeAffinityPolicy="Honor",
        nodeTaintsPolicy="Ignore",
        matchLabelKeys=["pod-template-hash"],
    )
    parsed = pod_ok(topologySpreadConstraints=[data])
    assert parsed.spec.topology_spread_constraints[0].min_domains == 3


@pytest.mark.parametrize(
    ("fields", "path", "words"),
    [
        ({"maxSkew": 0}, "maxSkew", "is not positive"),
        ({"maxSkew": -1}, "maxSkew", "is not positive"),
        ({"topologyKey": ""}, "topologyKey", "is empty"),
        ({"whenUnsatisfiable": "Sometimes"}, "whenUnsatisfiable", "unsupported value"),
        ({"minDomains": 0}, "minDomains", "is not positive"),
        ({"nodeAffinityPolicy": "Maybe"}, "nodeAffinityPolicy", "unsupported value"),
        ({"nodeTaintsPolicy": "honor"}, "nodeTaintsPolicy", "unsupported value"),
        (
            {"minDomains": 2, "whenUnsatisfiable": "ScheduleAnyway"},
            "minDomains",
            "minDomains can only be used with whenUnsatisfiable DoNotSchedule",
        ),
        (
            {"labelSelector": None, "matchLabelKeys": ["pod-template-hash"]},
            "matchLabelKeys",
            "without a labelSelector",
        ),
    ],
)
def test_topology_spread_rules(fields: dict[str, Any], path: str, words: str) -> None:
    data = {k: v for k, v in _spread(**fields).items() if v is not None}
    issue = pod_issue(topologySpreadConstraints=[data])
    assert issue.path == f"spec.topologySpreadConstraints[0].{path}"
    assert words in issue.message


def test_max_skew_must_be_an_integer() -> None:
    issue = pod_issue(topologySpreadConstraints=[_spread(maxSkew="1")])
    assert issue.path == "spec.topologySpreadConstraints[0].maxSkew"
    assert issue.message == "must be an integer"


def test_a_topology_key_and_when_unsatisfiable_pair_may_appear_once() -> None:
    anyway = _spread(whenUnsatisfiable="ScheduleAnyway")
    host = _spread(topologyKey=HOSTNAME)
    assert (
        len(
            pod_ok(
                topologySpreadConstraints=[_spread(), anyway, host]
            ).spec.topology_spread_constraints
        )
        == 3
    )
    issue = only_issue(Pod, pod(topologySpreadConstraints=[_spread(), host, _spread(maxSkew=2)]))
    assert issue.path == "spec.topologySpreadConstraints[2].topologyKey"
    assert "only once" in issue.message
