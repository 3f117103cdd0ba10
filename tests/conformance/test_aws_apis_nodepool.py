"""Conformance of a NodePool on AWS to the provider's NodePool CEL tests: the provider's
well-known labels as requirements and labels, and the known values of capacity type and tenancy
(checked by Karpenter's runtime validation once the NodePool exists; by driftwave before).

The well-known labels are Karpenter's own list as the provider extends it, asked of Karpenter
(the oracle); driftwave's list must be the same.
"""

from __future__ import annotations

import copy
from typing import Any

from agent.api.labels import NODECLASS_LABEL, WELL_KNOWN_LABELS
from tests.conformance.karpenter import mirrors
from tests.conformance.test_core_apis import Admission, api, req, template_metadata
from tests.support.oracle import KarpenterOracle

SUITE = "aws-apis"
SOURCE = "pkg/apis/v1/nodepool_validation_cel_test.go"
REQUIREMENTS = "CEL/Validation / Requirements / "
CAPACITY_TYPE = "karpenter.sh/capacity-type"
TENANCY = "karpenter.k8s.aws/instance-tenancy"

__all__ = ["api"]


def aws_nodepool(*requirements: dict[str, Any]) -> dict[str, Any]:
    """The NodePool the provider's tests start from (an EC2NodeClass reference and a
    capacity-type requirement), with ``requirements`` instead when given."""
    reqs = list(requirements) or [req(CAPACITY_TYPE, "Exists")]
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "pool"},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": "default",
                    },
                    "requirements": copy.deepcopy(reqs),
                }
            }
        },
    }


def karpenter_well_known(oracle: KarpenterOracle) -> set[str]:
    """Karpenter's well-known labels with the provider's; driftwave's must be the same, but for
    the node class label, which driftwave's NodePools may not use either (see below)."""
    labels = set(oracle.ask("label-sets")["wellKnownLabels"])
    assert labels == WELL_KNOWN_LABELS - {NODECLASS_LABEL}, "not Karpenter's well-known labels"
    return labels


@mirrors(SOURCE, REQUIREMENTS + "should allow well known label exceptions")
def test_well_known_label_requirements(api: Admission, karpenter_oracle: KarpenterOracle) -> None:
    skipped = {"karpenter.sh/nodepool", CAPACITY_TYPE, TENANCY}
    labels = sorted(karpenter_well_known(karpenter_oracle) - skipped)
    assert len(labels) > 30
    for label in labels:
        stored = api.admitted(aws_nodepool(req(label, "In", "test")), runtime=True)
        assert stored["spec"]["template"]["spec"]["requirements"][0]["key"] == label
    # The provider's CRD also admits the node class label, which Karpenter then refuses.
    found = api.refused_at_runtime_only(aws_nodepool(req(NODECLASS_LABEL, "In", "test")))
    assert [issue.path for issue in found] == ["spec.template.spec.requirements[0].key"]


@mirrors(SOURCE, REQUIREMENTS + "should fail validation with only invalid capacity types")
def test_only_invalid_capacity_types(api: Admission) -> None:
    found = api.refused_at_runtime_only(aws_nodepool(req(CAPACITY_TYPE, "In", "xspot")))
    assert [issue.path for issue in found] == ["spec.template.spec.requirements[0].values"]


@mirrors(SOURCE, REQUIREMENTS + "should pass validation with valid capacity types")
def test_valid_capacity_types(api: Admission) -> None:
    api.admitted(aws_nodepool(req(CAPACITY_TYPE, "In", "on-demand")), runtime=True)


@mirrors(SOURCE, REQUIREMENTS + "should fail open if invalid and valid capacity types are present")
def test_valid_and_invalid_capacity_types(api: Admission) -> None:
    api.admitted(aws_nodepool(req(CAPACITY_TYPE, "In", "on-demand", "xspot")), runtime=True)


@mirrors(SOURCE, REQUIREMENTS + "should fail validation with only invalid tenancy types")
def test_only_invalid_tenancy(api: Admission) -> None:
    found = api.refused_at_runtime_only(aws_nodepool(req(TENANCY, "In", "xdedicated")))
    assert [issue.path for issue in found] == ["spec.template.spec.requirements[0].values"]


@mirrors(SOURCE, REQUIREMENTS + "should pass validation with valid tenancy types")
def test_valid_tenancy(api: Admission) -> None:
    api.admitted(aws_nodepool(req(TENANCY, "In", "default")), runtime=True)


@mirrors(SOURCE, REQUIREMENTS + "should fail open if invalid and valid tenancy types are present")
def test_valid_and_invalid_tenancy(api: Admission) -> None:
    api.admitted(aws_nodepool(req(TENANCY, "In", "default", "xdedicated")), runtime=True)


@mirrors(SOURCE, "CEL/Validation / Labels / should allow well known label exceptions")
def test_well_known_labels(api: Admission, karpenter_oracle: KarpenterOracle) -> None:
    labels = sorted(karpenter_well_known(karpenter_oracle) - {"karpenter.sh/nodepool"})
    for label in labels:
        doc = template_metadata(aws_nodepool(), labels={label: "test"})
        stored = api.admitted(doc, runtime=True)
        assert stored["spec"]["template"]["metadata"]["labels"] == {label: "test"}
    doc = template_metadata(aws_nodepool(), labels={NODECLASS_LABEL: "test"})
    found = api.refused_at_runtime_only(doc)
    assert [issue.path for issue in found] == ["spec.template.metadata.labels"]
