"""Custom-label requirements: a NodeClaim carries a value for every custom key its NodePool (or
its pods) require, as Karpenter resolves them at creation, so a new NodeClaim is never
``RequirementsDrifted`` and never replaced for it (no launch, drift, replace loop)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent.api.kube import Node
from agent.api.nodeclaim import NodeClaim
from agent.api.nodepool import NodePool
from agent.lifecycle.drift import drift_reason
from agent.provisioning.provisioner import custom_labels
from agent.scheduling.requirement import Requirement
from agent.scheduling.requirements import Requirements
from agent.sim.report import report
from agent.sim.scenario_run import build_world, load_scenario, run
from tests.support.clouddrift import UNDESCRIBED

NODECLASS: dict[str, Any] = {
    "apiVersion": "karpenter.k8s.aws/v1",
    "kind": "EC2NodeClass",
    "metadata": {"name": "default"},
    "spec": {
        "amiSelectorTerms": [{"tags": {"env": "prod"}}],
        "amiFamily": "AL2023",
        "role": "node-role",
        "subnetSelectorTerms": [{"tags": {"k": "v"}}],
        "securityGroupSelectorTerms": [{"tags": {"k": "v"}}],
    },
}
IMAGE = {"id": "ami-0aa0", "name": "golden-1", "family": "AL2023",
         "created": "2025-12-01T00:00:00Z", "tags": {"env": "prod"}}  # fmt: skip
CUSTOM = [
    {"key": "team", "operator": "In", "values": ["payments"]},
    {"key": "kubernetes.io/test", "operator": "Exists"},
    {"key": "tier", "operator": "In", "values": ["gold", "silver", "bronze"]},
    {"key": "rack", "operator": "Gt", "values": ["10"]},
    {"key": "legacy", "operator": "DoesNotExist"},
]


def _pool() -> dict[str, Any]:
    requirements = [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m6i.xlarge"]},
        *CUSTOM,
    ]
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "default"},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": "default",
                    },
                    "requirements": requirements,
                }
            },
            "disruption": {"consolidateAfter": "Never"},
        },
    }


def _deployment(name: str, replicas: int, **pod: Any) -> dict[str, Any]:
    container = {"name": name, "image": name, "resources": {"requests": {"cpu": "1500m"}}}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [container], **pod},
            },
        },
    }


def _scenario(
    tmp_path: Path, *workloads: dict[str, Any], events: list[dict[str, Any]] | None = None
) -> Path:
    document = {
        "apiVersion": "driftwave.io/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "custom-labels"},
        "spec": {
            "cluster": {"name": "c", "kubernetesVersion": "1.31", "zones": ["us-east-1a"]},
            "amis": [IMAGE],
            "manifests": [_pool(), NODECLASS, *workloads],
            "events": events or [],
            "until": "30m",
        },
    }
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def test_a_pool_with_custom_label_requirements_runs_30_minutes_without_drift(
    tmp_path: Path,
) -> None:
    scenario, objects = load_scenario(
        _scenario(
            tmp_path,
            _deployment("web", 3),
            _deployment("ledger", 1, nodeSelector={"tier": "silver"}),
        )
    )
    world = run(build_world(scenario, objects, seed=1), scenario)
    result = report(world)
    kinds = [e["type"] for e in result["timeline"]]
    assert "Drifted" not in kinds
    assert "DisruptionStarted" not in kinds
    claims = world.cluster.list(NodeClaim)
    assert kinds.count("CreatedNodeClaim") == len(claims) >= 2
    assert result["summary"]["podsLost"] == 0
    assert result["summary"]["pendingPods"] == 0
    nodes = {node.metadata.name: node for node in world.cluster.list(Node)}
    assert len(nodes) == len(claims)
    tiers = set()
    for claim in claims:
        assert not any(c.type == "Drifted" for c in claim.status.conditions)
        node = nodes[claim.status.node_name]
        for labels in (claim.metadata.labels, node.metadata.labels):
            assert labels["team"] == "payments"
            assert int(labels["kubernetes.io/test"]) >= 0
            assert int(labels["rack"]) > 10
            assert labels["tier"] in {"gold", "silver", "bronze"}
            assert "legacy" not in labels
            assert labels["karpenter.k8s.aws/ec2nodeclass"] == "default"
        tiers.add(node.metadata.labels["tier"])
        ledger = [p for p in claim_pods(result, claim.name) if p.startswith("default/ledger")]
        if ledger:
            assert node.metadata.labels["tier"] == "silver"
    assert "silver" in tiers


def test_drift_replacements_carry_the_labels_and_drift_no_further(tmp_path: Path) -> None:
    newer = {**IMAGE, "id": "ami-0bb0", "name": "golden-2", "created": "2025-12-20T00:00:00Z"}
    path = _scenario(tmp_path, _deployment("web", 3), events=[{"at": "5m", "publishAmi": newer}])
    scenario, objects = load_scenario(path)
    world = run(build_world(scenario, objects, seed=3), scenario)
    result = report(world)
    drifted = [e for e in result["timeline"] if e["type"] == "Drifted"]
    assert drifted
    assert {e["reason"] for e in drifted} == {"AMIDrift"}
    assert len({e["object"] for e in drifted}) == len(drifted)  # each node drifts once
    claims = world.cluster.list(NodeClaim)
    assert claims
    for claim in claims:
        assert claim.status.image_id == "ami-0bb0"
        assert claim.metadata.labels["team"] == "payments"
        assert not any(c.type == "Drifted" for c in claim.status.conditions)
    assert result["summary"]["podsLost"] == 0


def claim_pods(result: dict[str, Any], name: str) -> list[str]:
    """The pods the report places on NodeClaim ``name``."""
    return next(list(c["pods"]) for c in result["nodeClaims"] if c["name"] == name)


def _requirements(*specs: tuple[str, str, tuple[str, ...]]) -> Requirements:
    return Requirements(*(Requirement(key, op, values) for key, op, values in specs))


def test_in_takes_one_of_the_allowed_values() -> None:
    found = custom_labels(_requirements(("tier", "In", ("silver", "gold"))), random.Random(1))
    assert found == {"tier": "gold"}


def test_exists_and_not_in_take_an_integer_that_is_not_excluded() -> None:
    wanted = _requirements(("a", "Exists", ()), ("b", "NotIn", ("1", "2")))
    for seed in range(20):
        found = custom_labels(wanted, random.Random(seed))
        assert int(found["a"]) >= 0
        assert found["b"] not in {"1", "2"}
        assert int(found["b"]) >= 0


@pytest.mark.parametrize(
    ("operator", "value", "low", "high"),
    [("Gt", "10", 11, 2**63 - 1), ("Lt", "3", 0, 2), ("Lt", "-5", -6, -6), ("Gte", "7", 7, None)],
)
def test_bounds_are_kept(operator: str, value: str, low: int, high: int | None) -> None:
    for seed in range(20):
        found = custom_labels(_requirements(("k", operator, (value,))), random.Random(seed))
        number = int(found["k"])
        assert number >= low
        assert high is None or number <= high


def test_narrow_bounds_with_exclusions_pick_the_one_value_left() -> None:
    wanted = _requirements(("k", "Gt", ("4",)), ("k", "Lt", ("8",)), ("k", "NotIn", ("5", "7")))
    assert custom_labels(wanted, random.Random(0)) == {"k": "6"}


def test_well_known_hostname_and_absent_keys_get_no_label() -> None:
    wanted = _requirements(
        ("topology.kubernetes.io/zone", "In", ("us-east-1a",)),
        ("karpenter.sh/capacity-type", "In", ("spot", "on-demand")),
        ("karpenter.k8s.aws/instance-family", "In", ("m6i",)),
        ("kubernetes.io/hostname", "In", ("h",)),
        ("karpenter.sh/initialized", "In", ("true",)),
        ("legacy", "DoesNotExist", ()),
    )
    assert custom_labels(wanted, random.Random(0)) == {}


def test_the_drift_check_accepts_the_labels_and_refuses_a_claim_without_them(
    tmp_path: Path,
) -> None:
    scenario, objects = load_scenario(_scenario(tmp_path, _deployment("web", 1)))
    world = run(build_world(scenario, objects, seed=2), scenario, until=120)
    (claim,) = world.cluster.list(NodeClaim)
    pool = next(o for o in objects if isinstance(o, NodePool))
    assert drift_reason(claim, pool, None, UNDESCRIBED) is None
    for key in ("team", "kubernetes.io/test", "tier", "rack"):
        labels = {k: v for k, v in claim.metadata.labels.items() if k != key}
        stripped = claim.model_copy(
            update={"metadata": claim.metadata.model_copy(update={"labels": labels})}
        )
        assert drift_reason(stripped, pool, None, UNDESCRIBED) == "RequirementsDrifted"
    legacy = {**claim.metadata.labels, "legacy": "yes"}
    marked = claim.model_copy(
        update={"metadata": claim.metadata.model_copy(update={"labels": legacy})}
    )
    assert drift_reason(marked, pool, None, UNDESCRIBED) == "RequirementsDrifted"
