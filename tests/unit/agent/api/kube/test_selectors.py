"""Label selectors and node selectors: operator/value rules, matchFields rules, matching."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent.api.kube import (
    LabelSelector,
    LabelSelectorRequirement,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
)
from common.kubemodel import parse_manifest

from .helpers import only_issue, pod_issue, pod_ok


def _expr(operator: str, values: list[str] | None = None, key: str = "tier") -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values is not None:
        out["values"] = values
    return out


@pytest.mark.parametrize(
    "expr",
    [
        _expr("In", ["web"]),
        _expr("NotIn", ["db", "cache"]),
        _expr("Exists"),
        _expr("DoesNotExist"),
        _expr("Exists", []),
    ],
)
def test_label_selector_accepts_values_that_fit_the_operator(expr: dict[str, Any]) -> None:
    data = {"matchExpressions": [expr]}
    selector = parse_manifest(LabelSelector, data)
    assert selector.match_expressions[0].operator == expr["operator"]
    assert selector.to_manifest() == data


@pytest.mark.parametrize(
    ("expr", "words"),
    [
        (_expr("In", []), "operator In has no values"),
        (_expr("NotIn"), "operator NotIn has no values"),
        (_expr("Exists", ["web"]), "operator Exists must not have values"),
        (_expr("DoesNotExist", ["web"]), "operator DoesNotExist must not have values"),
    ],
)
def test_label_selector_refuses_values_that_do_not_fit_the_operator(
    expr: dict[str, Any], words: str
) -> None:
    issue = only_issue(LabelSelector, {"matchExpressions": [_expr("In", ["x"], key="a"), expr]})
    assert issue.path == "matchExpressions[1].values"
    assert words in issue.message
    assert "(rule: " in issue.message


def test_label_selector_refuses_an_unknown_operator() -> None:
    issue = only_issue(LabelSelector, {"matchExpressions": [_expr("Gt", ["1"])]})
    assert issue.path == "matchExpressions[0].operator"
    assert issue.message.startswith("unsupported value")


def test_label_selector_refuses_an_empty_key() -> None:
    issue = only_issue(LabelSelector, {"matchExpressions": [_expr("Exists", key="")]})
    assert issue.path == "matchExpressions[0].key"


def test_label_selector_rule_reports_the_full_path_inside_a_pod() -> None:
    term = {
        "labelSelector": {"matchExpressions": [_expr("In", [])]},
        "topologyKey": "kubernetes.io/hostname",
    }
    issue = pod_issue(
        affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    )
    assert issue.path == (
        "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
        ".labelSelector.matchExpressions[0].values"
    )


@pytest.mark.parametrize(
    ("selector", "labels", "selected"),
    [
        ({}, {"app": "web"}, True),
        ({"matchLabels": {"app": "web"}}, {"app": "web", "tier": "a"}, True),
        ({"matchLabels": {"app": "web"}}, {"app": "db"}, False),
        ({"matchLabels": {"app": "web"}}, {}, False),
        ({"matchExpressions": [_expr("In", ["a", "b"])]}, {"tier": "b"}, True),
        ({"matchExpressions": [_expr("In", ["a", "b"])]}, {"tier": "c"}, False),
        ({"matchExpressions": [_expr("In", ["a"])]}, {}, False),
        ({"matchExpressions": [_expr("NotIn", ["a"])]}, {}, True),
        ({"matchExpressions": [_expr("NotIn", ["a"])]}, {"tier": "a"}, False),
        ({"matchExpressions": [_expr("Exists")]}, {"tier": ""}, True),
        ({"matchExpressions": [_expr("Exists")]}, {"app": "x"}, False),
        ({"matchExpressions": [_expr("DoesNotExist")]}, {"app": "x"}, True),
        ({"matchExpressions": [_expr("DoesNotExist")]}, {"tier": "a"}, False),
        (
            {"matchLabels": {"app": "web"}, "matchExpressions": [_expr("Exists")]},
            {"app": "web"},
            False,
        ),
    ],
)
def test_label_selector_matches_like_the_api_server(
    selector: dict[str, Any], labels: dict[str, str], selected: bool
) -> None:
    assert parse_manifest(LabelSelector, selector).matches(labels) is selected


def test_is_empty_only_without_terms() -> None:
    assert LabelSelector().is_empty
    assert not LabelSelector(match_labels={"a": "b"}).is_empty
    assert not LabelSelector(
        match_expressions=[LabelSelectorRequirement(key="a", operator="Exists")]
    ).is_empty


label_text = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=8)
label_sets = st.dictionaries(label_text, label_text, min_size=1, max_size=5)


@given(labels=label_sets, extra=label_sets)
def test_a_selector_of_an_objects_labels_selects_it(
    labels: dict[str, str], extra: dict[str, str]
) -> None:
    selector = LabelSelector(match_labels=labels)
    assert selector.matches({**extra, **labels})
    key, value = next(iter(labels.items()))
    refusing = LabelSelector(
        match_labels=labels,
        match_expressions=[LabelSelectorRequirement(key=key, operator="NotIn", values=[value])],
    )
    assert not refusing.matches({**extra, **labels})


@pytest.mark.parametrize(
    "expr",
    [
        _expr("In", ["m5.large"]),
        _expr("NotIn", ["a", "b"]),
        _expr("Exists"),
        _expr("DoesNotExist"),
        _expr("Gt", ["3"]),
        _expr("Lt", ["-2"]),
    ],
)
def test_node_selector_requirement_accepts_fitting_values(expr: dict[str, Any]) -> None:
    assert parse_manifest(NodeSelectorRequirement, expr).to_manifest() == expr


@pytest.mark.parametrize(
    ("expr", "path", "words"),
    [
        (_expr("In", []), "values", "operator In has no values"),
        (_expr("NotIn"), "values", "operator NotIn has no values"),
        (_expr("Exists", ["a"]), "values", "operator Exists must not have values"),
        (_expr("DoesNotExist", ["a"]), "values", "must not have values"),
        (_expr("Gt", []), "values", "operator Gt has 0 values"),
        (_expr("Lt", ["1", "2"]), "values", "operator Lt has 2 values"),
        (_expr("Gt", ["four"]), "values[0]", "'four' is not an integer"),
        (_expr("Lt", ["1.5"]), "values[0]", "'1.5' is not an integer"),
        (_expr("Between", ["1"]), "operator", "unsupported value"),
    ],
)
def test_node_selector_requirement_refuses_values_that_do_not_fit(
    expr: dict[str, Any], path: str, words: str
) -> None:
    issue = only_issue(NodeSelectorRequirement, expr)
    assert issue.path == path
    assert words in issue.message


def test_match_fields_accepts_metadata_name_with_one_value() -> None:
    data = {"matchFields": [_expr("In", ["ip-10-0-1-2.ec2.internal"], key="metadata.name")]}
    term = parse_manifest(NodeSelectorTerm, data)
    assert term.match_fields[0].values == ["ip-10-0-1-2.ec2.internal"]


@pytest.mark.parametrize(
    ("expr", "path", "words"),
    [
        (_expr("In", ["a"], key="metadata.labels"), "matchFields[0].key", "only metadata.name"),
        (_expr("Exists", key="metadata.name"), "matchFields[0].operator", "only In and NotIn"),
        (_expr("Gt", ["1"], key="metadata.name"), "matchFields[0].operator", "only In and NotIn"),
        (_expr("NotIn", ["a", "b"], key="metadata.name"), "matchFields[0].values", "exactly one"),
    ],
)
def test_match_fields_refuses_what_the_api_server_refuses(
    expr: dict[str, Any], path: str, words: str
) -> None:
    issue = only_issue(NodeSelectorTerm, {"matchFields": [expr]})
    assert issue.path == path
    assert words in issue.message


def test_node_selector_needs_at_least_one_term() -> None:
    issue = only_issue(NodeSelector, {"nodeSelectorTerms": []})
    assert issue.path == "nodeSelectorTerms"
    assert "at least one term" in issue.message
    missing = only_issue(NodeSelector, {})
    assert missing.path == "nodeSelectorTerms"
    assert missing.message == "required field is missing"


def test_required_node_affinity_parses_and_reports_full_paths() -> None:
    def affinity(expr: dict[str, Any]) -> dict[str, Any]:
        required = {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}
        return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}

    parsed = pod_ok(affinity=affinity(_expr("In", ["spot"], key="karpenter.sh/capacity-type")))
    assert parsed.spec.affinity is not None
    node_affinity = parsed.spec.affinity.node_affinity
    assert node_affinity is not None
    required = node_affinity.required_during_scheduling_ignored_during_execution
    assert required is not None
    assert required.node_selector_terms[0].match_expressions[0].values == ["spot"]

    issue = pod_issue(affinity=affinity(_expr("Gt", ["x"], key="karpenter.k8s.aws/instance-cpu")))
    assert issue.path == (
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        ".nodeSelectorTerms[0].matchExpressions[0].values[0]"
    )
