"""Karpenter's own controller (v1.14.1) on the test control plane, EC2 at moto's server behind
the gap-filling proxy: pending pods become Running on nodes Karpenter launched, its NodeClaims
carry its hash annotations, and nothing drifts that did not change (the proof the gaps of
tests/support/ec2gaps.py are filled: without the CreateFleet fix every node is
``SecurityGroupDrift`` at once)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.eksworld import (
    AWS_TEST_CREDENTIALS,
    EKSWorld,
    deployment,
    eks_world,
    nodeclass,
    nodepool,
    unbuilt,
)
from tests.support.karpenter import running_karpenter
from tests.support.kubeobjects import create, items
from tests.support.procs import Processes
from tests.support.required import unavailable

pytestmark = pytest.mark.integration


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[EKSWorld]:
    if missing := unbuilt():
        unavailable(f"not built: {', '.join(missing)} (make tools; needs Go)")
    for name, value in AWS_TEST_CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    with eks_world(tmp_path) as built:
        yield built


def running_pods(world: EKSWorld) -> int:
    pods = world.nodes.core.list_namespaced_pod("default").items
    return sum(1 for pod in pods if pod.status.phase == "Running")


def test_karpenter_runs_fifty_pending_pods_on_nodes_it_launched(world: EKSWorld) -> None:
    create(world.rest, nodeclass())
    create(world.rest, nodepool())
    create(world.rest, deployment("web", 50, "500m", "512Mi"))
    waits = Processes(world.folder, {})
    with running_karpenter(world.plane, world.aws_url) as karpenter:
        waits.wait_for(lambda: running_pods(world) == 50, "50 pods Running", 240)
        claims = items(world.rest, "nodeclaims")
        assert claims, "Karpenter created NodeClaims"
        for claim in claims:
            annotations = claim["metadata"]["annotations"]
            assert annotations["karpenter.sh/nodepool-hash-version"] == "v3"
            assert annotations["karpenter.k8s.aws/ec2nodeclass-hash-version"] == "v5"
            assert annotations["karpenter.sh/nodepool-hash"].isdigit()
            assert annotations["karpenter.k8s.aws/ec2nodeclass-hash"].isdigit()
            assert claim["status"]["imageID"] == world.images["v20251202"]
            assert claim["status"]["providerID"].startswith("aws:///us-east-1")
        nodes = {n.spec.provider_id for n in world.nodes.core.list_node().items}
        assert {c["status"]["providerID"] for c in claims} == nodes
        assert world.running_images() == sorted(world.images["v20251202"] for _ in claims)
        checked = len(claims)
        waits.wait_for(
            lambda: karpenter.reconciles("nodeclaim.disruption") >= checked,
            "Karpenter's drift checks to look at every NodeClaim",
            120,
        )
        drifted = [
            (c["metadata"]["name"], cond.get("reason"))
            for c in items(world.rest, "nodeclaims")
            for cond in c["status"].get("conditions", [])
            if cond["type"] == "Drifted" and cond["status"] == "True"
        ]
        assert drifted == []
