"""Custom-label requirements: the labels driftwave puts on a new NodeClaim for a NodePool's
custom (not well-known) requirement keys must leave it undrifted in Karpenter's eyes as in
ours, and a NodeClaim missing one must be ``RequirementsDrifted`` for both (unless the key is
only ``NotIn``, which allows the label's absence).

Generated requirements (``In`` with one or several values, ``Exists``, ``NotIn``, ``Gt``,
``Lt``, ``DoesNotExist``) on generated custom keys; the labels come from
:func:`agent.provisioning.provisioner.custom_labels`, as the provisioner creates NodeClaims.
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agent.api.nodepool import NodePool
from agent.provisioning.provisioner import custom_labels
from agent.scheduling.requirements import Requirements
from common.kubemodel import parse_manifest
from tests.differential.objects import Manifest, ec2nodeclass, nodepool
from tests.differential.test_drift import INSTANCE_ID, claim_of, decide
from tests.support.oracle import KarpenterOracle

KEYS = ["team", "kubernetes.io/test", "example.com/tier", "rack", "legacy"]
INSTANCE = {"id": INSTANCE_ID, "subnetID": "subnet-1", "securityGroupIDs": ["sg-1"]}


@st.composite
def requirement(draw: st.DrawFn, key: str) -> Manifest:
    """One requirement on ``key`` that some label value (or no label) satisfies."""
    operator = draw(st.sampled_from(["In", "Exists", "NotIn", "Gt", "Lt", "DoesNotExist"]))
    found: dict[str, Any] = {"key": key, "operator": operator}
    if operator in ("In", "NotIn"):
        found["values"] = draw(
            st.lists(st.sampled_from(["a", "b", "payments", "7"]), min_size=1, unique=True)
        )
    elif operator in ("Gt", "Lt"):
        found["values"] = [str(draw(st.integers(1, 10**6)))]
    return found


@st.composite
def requirements(draw: st.DrawFn) -> list[Manifest]:
    keys = draw(st.lists(st.sampled_from(KEYS), min_size=1, max_size=4, unique=True))
    return [draw(requirement(key)) for key in keys]


def _claim(labels: dict[str, str]) -> Manifest:
    claim = claim_of("m5.large", "on-demand", None)
    claim["metadata"]["labels"] |= labels
    return claim


@settings(max_examples=60, deadline=None)
@given(wanted=requirements(), seed=st.integers(0, 2**16), drop=st.integers(0, 3))
def test_resolved_custom_labels_do_not_drift_and_missing_ones_do(
    karpenter_oracle: KarpenterOracle, wanted: list[Manifest], seed: int, drop: int
) -> None:
    pool, nodeclass = nodepool(requirements=wanted), ec2nodeclass()
    template = parse_manifest(NodePool, pool).spec.template
    resolved = Requirements.from_node_selector_requirements(template.spec.requirements)
    labels = custom_labels(resolved, random.Random(seed))
    theirs, ours = decide(
        karpenter_oracle, _claim(labels), (pool, nodeclass), (pool, nodeclass), INSTANCE
    )
    assert theirs is None
    assert ours is None
    if not labels:
        return
    missing = sorted(labels)[drop % len(labels)]
    stripped = {k: v for k, v in labels.items() if k != missing}
    theirs, ours = decide(
        karpenter_oracle, _claim(stripped), (pool, nodeclass), (pool, nodeclass), INSTANCE
    )
    operator = next(r["operator"] for r in wanted if r["key"] == missing)
    expected = None if operator == "NotIn" else "RequirementsDrifted"  # NotIn allows absence
    assert theirs == ours == expected
