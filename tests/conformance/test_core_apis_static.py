"""Conformance of a NodePool's node class reference and static pools (``replicas``) to Karpenter's
CEL validation tests.

Rules that compare an update with the stored object (an immutable ``nodeClassRef`` group and
kind, no switch between static and dynamic provisioning) live in the chart's CRDs, as in
Karpenter's: the API server refuses such an update, while each object alone is valid for
driftwave's own validation (a file check sees no previous object).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.conformance.karpenter import mirrors
from tests.conformance.test_core_apis import (
    Admission,
    api,
    core_nodepool,
    req,
    template,
    template_metadata,
)

SUITE = "core-apis"
SOURCE = "pkg/apis/v1/nodepool_validation_cel_test.go"
REF = "CEL/Validation / NodeClassRef / "
REPLICAS = "CEL/Validation / Replicas / "

__all__ = ["api"]


def _ref(pool: dict[str, Any], **fields: str) -> dict[str, Any]:
    ref = {**pool["spec"]["template"]["spec"]["nodeClassRef"], **fields}
    return template(pool, nodeClassRef=ref)


def static(replicas: int, **spec: Any) -> dict[str, Any]:
    """The core NodePool made static with ``replicas`` (and ``spec`` keys added)."""
    return core_nodepool(replicas=replicas, **spec)


# --- NodeClassRef ----------------------------------------------------------------------------


@mirrors(SOURCE, REF + "should fail to mutate group")
def test_node_class_group_is_immutable(api: Admission) -> None:
    stored = api.admitted(core_nodepool())
    assert api.driftwave_issues(_ref(core_nodepool(), group="karpenter.test.mutated.sh")) == []
    patch = {
        "spec": {"template": {"spec": {"nodeClassRef": {"group": "karpenter.test.mutated.sh"}}}}
    }
    assert "nodeClassRef.group is immutable" in api.update_refusal(stored, patch)


@mirrors(SOURCE, REF + "should fail to mutate kind")
def test_node_class_kind_is_immutable(api: Admission) -> None:
    stored = api.admitted(core_nodepool())
    assert api.driftwave_issues(_ref(core_nodepool(), kind="TestNodeClass2")) == []
    patch = {"spec": {"template": {"spec": {"nodeClassRef": {"kind": "TestNodeClass2"}}}}}
    assert "nodeClassRef.kind is immutable" in api.update_refusal(stored, patch)


@mirrors(SOURCE, REF + "should fail if group is unset")
def test_node_class_group_unset(api: Admission) -> None:
    found = api.refused(_ref(core_nodepool(), group=""))
    assert [issue.path for issue in found] == ["spec.template.spec.nodeClassRef.group"]


@mirrors(SOURCE, REF + "should fail if kind is unset")
def test_node_class_kind_unset(api: Admission) -> None:
    found = api.refused(_ref(core_nodepool(), kind=""))
    assert [issue.path for issue in found] == ["spec.template.spec.nodeClassRef.kind"]


@mirrors(SOURCE, REF + "should fail if name is unset")
def test_node_class_name_unset(api: Admission) -> None:
    found = api.refused(_ref(core_nodepool(), name=""))
    assert [issue.path for issue in found] == ["spec.template.spec.nodeClassRef.name"]


# --- Replicas --------------------------------------------------------------------------------


@mirrors(
    SOURCE,
    REPLICAS + "Valid Replicas Values / should succeed when replicas is set to a positive value",
)
def test_positive_replicas(api: Admission) -> None:
    assert api.admitted(static(5), runtime=True)["spec"]["replicas"] == 5


@mirrors(SOURCE, REPLICAS + "Valid Replicas Values / should succeed when replicas is set to zero")
def test_zero_replicas(api: Admission) -> None:
    assert api.admitted(static(0), runtime=True)["spec"]["replicas"] == 0


@mirrors(
    SOURCE,
    REPLICAS + "Valid Replicas Values / should succeed when replicas is set to a large value",
)
def test_large_replicas(api: Admission) -> None:
    assert api.admitted(static(1000), runtime=True)["spec"]["replicas"] == 1000


@mirrors(
    SOURCE,
    REPLICAS + "Invalid Replicas Values / should fail when replicas is set to a negative value",
)
def test_negative_replicas(api: Admission) -> None:
    found = api.refused(static(-100))
    assert [issue.path for issue in found] == ["spec.replicas"]


INCOMPATIBLE: dict[str, dict[str, Any]] = {
    "limits.cpu": {"limits": {"cpu": "1000"}},
    "limits.memory": {"limits": {"memory": "2000Gi"}},
    "limits.pods": {"limits": {"pods": "10"}},
    "limits.ephemeral-storage": {"limits": {"ephemeral-storage": "10Gi"}},
    "weight": {"weight": 25},
}


@mirrors(SOURCE, REPLICAS + "should fail for incompatible fields")
@pytest.mark.parametrize("entry", sorted(INCOMPATIBLE))
def test_static_pool_incompatible_fields(api: Admission, entry: str) -> None:
    found = api.refused(static(10, **INCOMPATIBLE[entry]))
    assert [issue.path for issue in found] == [f"spec.{entry.split('.')[0]}"]


def _with_budgets(pool: dict[str, Any]) -> dict[str, Any]:
    pool["spec"]["disruption"] = {
        "consolidationPolicy": "WhenEmptyOrUnderutilized",
        "consolidateAfter": "5m0s",
        "budgets": [
            {
                "nodes": "20%",
                "schedule": "0 9 * * mon-fri",
                "duration": "8h0m0s",
                "reasons": ["Drifted", "Empty"],
            },
            {
                "nodes": "30%",
                "schedule": "0 22 * * sat,sun",
                "duration": "4h0m0s",
                "reasons": ["Underutilized"],
            },
            {"nodes": "5"},
        ],
    }
    return pool


COMPATIBLE: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "limits.nodes": lambda p: {**p, "spec": {**p["spec"], "limits": {"nodes": "100"}}},
    "disruption with multiple budgets": _with_budgets,
    "template labels": lambda p: template_metadata(p, labels={"environment": "production"}),
    "template annotations": lambda p: template_metadata(
        p, annotations={"example.com/last-updated": "2024-01-01"}
    ),
    "taints": lambda p: template(
        p, taints=[{"key": "gpu-workload", "value": "enabled", "effect": "NoSchedule"}]
    ),
    "startup taints": lambda p: template(
        p,
        startupTaints=[
            {"key": "example.com/initializing", "value": "true", "effect": "NoSchedule"}
        ],
    ),
    "requirements": lambda p: template(
        p,
        requirements=[
            req(
                "node.kubernetes.io/instance-type",
                "In",
                *("m5.large", "m5.xlarge", "m5.2xlarge", "c5.large", "c5.xlarge"),
                *("r5.large", "r5.xlarge"),
                minValues=3,
            ),
            req("topology.kubernetes.io/zone", "In", "us-west-2a", "us-west-2b", "us-west-2c"),
            req("karpenter.sh/capacity-type", "In", "on-demand", "spot"),
            req("kubernetes.io/arch", "In", "amd64"),
            req("karpenter.k8s.aws/instance-memory", "Gt", "8192"),
            req("karpenter.k8s.aws/instance-cpu", "Lt", "64"),
        ],
    ),
    "expireAfter": lambda p: template(p, expireAfter="72h"),
    "terminationGracePeriod": lambda p: template(p, terminationGracePeriod="5m0s"),
}


@mirrors(SOURCE, REPLICAS + "should succeed for compatible fields")
@pytest.mark.parametrize("entry", list(COMPATIBLE))
def test_static_pool_compatible_fields(api: Admission, entry: str) -> None:
    doc = COMPATIBLE[entry](static(10))
    stored = api.admitted(doc, runtime=True)
    assert stored["spec"]["replicas"] == 10
    assert stored["spec"]["template"] == {
        **doc["spec"]["template"],
        "spec": {"expireAfter": "720h", **doc["spec"]["template"]["spec"]},
    }


@mirrors(
    SOURCE, REPLICAS + "Update Scenarios / should succeed when increasing replicas in a NodePool"
)
def test_increase_replicas(api: Admission) -> None:
    stored = api.admitted(static(3))
    assert api.updated(stored, {"spec": {"replicas": 5}})["spec"]["replicas"] == 5
    assert api.driftwave_issues(static(5)) == []


@mirrors(
    SOURCE,
    REPLICAS + "Update Scenarios / should fail when changing the NodePool from static to dynamic",
)
def test_static_to_dynamic(api: Admission) -> None:
    stored = api.admitted(static(3))
    message = api.update_refusal(stored, {"spec": {"replicas": None}})
    assert "Cannot transition NodePool between static (replicas set) and dynamic" in message


@mirrors(
    SOURCE,
    REPLICAS + "Update Scenarios / should fail when changing the NodePool from dynamic to static",
)
def test_dynamic_to_static(api: Admission) -> None:
    stored = api.admitted(core_nodepool())
    message = api.update_refusal(stored, {"spec": {"replicas": 3}})
    assert "Cannot transition NodePool between static (replicas set) and dynamic" in message


@mirrors(
    SOURCE,
    REPLICAS + "Update Scenarios / should succeed when changing the static NodePool nodes limit",
)
def test_change_static_nodes_limit(api: Admission) -> None:
    stored = api.admitted(static(3, limits={"nodes": "10"}))
    updated = api.updated(stored, {"spec": {"limits": {"nodes": "100"}}})
    assert updated["spec"]["limits"] == {"nodes": "100"}
    assert api.driftwave_issues(static(3, limits={"nodes": "100"})) == []
