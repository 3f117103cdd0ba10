"""Label rules: qualified names, label values, restricted domains, and a NodePool's template
labels."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent.api.labels import restricted_label_problem
from common.names import dns_subdomain_problem, label_value_problem, qualified_name_problem

from .helpers import (
    REQS,
    claim_ok,
    nodeclaim,
    nodepool,
    nodepool_with_requirements,
    pool_ok,
    pool_refused,
    requirement,
    with_field,
)

LABELS = "spec.template.metadata.labels"

# The CRD's patterns, anchored at both ends of the text as Go's regexp anchors them.
KEY_PATTERN = re.compile(
    r"\A([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z"
)
VALUE_PATTERN = re.compile(r"\A(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?\Z")


def with_labels(labels: dict[str, Any]) -> dict[str, Any]:
    return with_field(nodepool(), LABELS, labels)


# --- template labels -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "labels",
    [
        {"team": "my-team"},
        {"example.com/team": ""},
        {"intent": "apps", "ami-family": "AL2023"},
        {"karpenter.sh/capacity-type": "spot"},
        {"karpenter.k8s.aws/instance-family": "m5"},
        {"node.kubernetes.io/instance-type": "m5.large"},
        {"x" * 63: "v" * 63},
        {f"example.com/l{i}": str(i) for i in range(100)},
    ],
    ids=["plain", "empty-value", "two", "capacity-type", "aws-well-known", "k8s", "63", "100"],
)
def test_valid_template_labels_are_accepted(labels: dict[str, str]) -> None:
    pool = pool_ok(with_labels(labels))
    assert pool.spec.template.metadata.labels == labels


@pytest.mark.parametrize(
    ("key", "fragment"),
    [
        ("karpenter.sh/nodepool", 'label "karpenter.sh/nodepool" is restricted'),
        ("kubernetes.io/hostname", 'label "kubernetes.io/hostname" is restricted'),
        ("karpenter.sh/registered", 'label domain "karpenter.sh" is restricted'),
        ("team.karpenter.sh/x", 'label domain "karpenter.sh" is restricted'),
        ("karpenter.k8s.aws/custom", 'label domain "karpenter.k8s.aws" is restricted'),
        ("bad key", "name part 'bad key'"),
        ("Example.com/team", "must be a DNS subdomain"),
        ("x" * 64, "1-63 characters"),
    ],
)
def test_restricted_or_malformed_template_label_keys_are_refused(key: str, fragment: str) -> None:
    issue = pool_refused(with_labels({"team": "a", key: "v"}), LABELS, fragment)
    assert repr(key) in issue.message


@pytest.mark.parametrize("value", ["-a", "a-", "a b", "a/b", "v" * 64])
def test_invalid_template_label_values_are_refused(value: str) -> None:
    pool_refused(with_labels({"team": value}), LABELS, "label 'team'", "label value")


def test_more_than_one_hundred_template_labels_are_refused() -> None:
    labels = {f"example.com/l{i}": str(i) for i in range(101)}
    pool_refused(with_labels(labels), LABELS, "at most 100")


def test_template_label_value_must_be_a_string() -> None:
    pool_refused(with_labels({"team": 1}), f"{LABELS}.team", "must be a string")


def test_template_annotations_take_any_string_keys_and_values() -> None:
    data = with_field(
        nodepool(),
        "spec.template.metadata.annotations",
        {"karpenter.sh/do-not-disrupt": "true", "example.com/note": "any text: at all"},
    )
    pool_ok(data)


def test_template_metadata_refuses_unknown_fields() -> None:
    data = with_field(nodepool(), "spec.template.metadata.name", "x")
    pool_refused(data, "spec.template.metadata.name", "unknown field")


# CRD patterns are Go regexps: '$' matches only at the very end, not before a trailing newline.
def test_template_label_value_with_trailing_newline_is_refused() -> None:
    pool_refused(with_labels({"team": "apps\n"}), LABELS, "label value")


# --- the label functions ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ["default", "gpu-pool.team-a", "a" * 253])
def test_object_names_that_are_dns_subdomains_pass(name: str) -> None:
    assert dns_subdomain_problem(name) is None


@pytest.mark.parametrize("name", ["Default", "foo_bar", "-a", "a.", "a" * 254, "team\n"])
def test_object_names_that_are_not_dns_subdomains_fail(name: str) -> None:
    assert dns_subdomain_problem(name) is not None


@pytest.mark.parametrize(
    ("key", "restricted"),
    [
        ("karpenter.sh/capacity-type", False),
        ("karpenter.sh/nodepool", True),
        ("kubernetes.io/hostname", True),
        ("karpenter.sh/do-not-sync-taints", True),
        ("a.karpenter.sh/x", True),
        ("notkarpenter.sh/x", True),
        ("karpenter.k8s.aws/instance-gpu-count", False),
        ("karpenter.k8s.aws/instance-gpus", True),
        ("example.com/karpenter.k8s.aws", False),
        ("topology.kubernetes.io/zone", False),
        ("team", False),
    ],
)
def test_restricted_label_problem(key: str, restricted: bool) -> None:
    assert (restricted_label_problem(key) is not None) is restricted


KEYISH = st.text(alphabet="aZ09-_./ ", max_size=24)


@given(KEYISH)
def test_qualified_name_problem_agrees_with_the_crd_pattern(key: str) -> None:
    prefix, _, name = key.rpartition("/")
    expected = bool(KEY_PATTERN.match(key)) and len(name) <= 63 and len(prefix) <= 253
    assert (qualified_name_problem(key) is None) is expected


@given(
    st.from_regex(
        r"\A[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?){0,3}/"
        r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,40}[A-Za-z0-9])?\Z"
    )
)
def test_generated_prefixed_names_are_qualified_names(key: str) -> None:
    assert qualified_name_problem(key) is None


@given(st.text(alphabet="aZ09-_. /", max_size=70))
def test_label_value_problem_agrees_with_the_crd_pattern(value: str) -> None:
    expected = bool(VALUE_PATTERN.match(value)) and len(value) <= 63
    assert (label_value_problem(value) is None) is expected


def test_the_node_class_label_is_karpenters_own() -> None:
    """The provider's CRD admits it on a NodePool, but Karpenter's runtime validation refuses it:
    Karpenter writes it on every NodeClaim (which may therefore require it)."""
    key = "karpenter.k8s.aws/ec2nodeclass"
    pool_refused(
        nodepool_with_requirements(requirement(key, "In", "default")),
        f"{REQS}[0].key",
        "Karpenter sets it on every node itself",
    )
    pool_refused(
        with_field(nodepool(), "spec.template.metadata.labels", {key: "default"}),
        "spec.template.metadata.labels",
        "is restricted",
    )
    claim_ok(nodeclaim(requirements=[requirement(key, "In", "default")]))
