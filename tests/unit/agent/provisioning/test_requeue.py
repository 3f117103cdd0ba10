"""Pods left pending by a solve are tried again: Karpenter's pod controller requeues a
provisionable pod every 10 s, triggering provisioning while it stays pending. Pods with zone
affinity to pods of their own batch (whose NodeClaim has no zone yet when they are solved) are
placed by the solve after it, once that NodeClaim has launched in a zone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from agent.scheduling.strategy import Strategy
from agent.sim.report import report
from agent.sim.scenario_run import build_world, load_scenario, run
from agent.sim.world import World

NODECLASS = {
    "apiVersion": "karpenter.k8s.aws/v1",
    "kind": "EC2NodeClass",
    "metadata": {"name": "default"},
    "spec": {
        "amiSelectorTerms": [{"alias": "al2023@v20251202"}],
        "role": "KarpenterNodeRole-demo",
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
    },
}
POOL = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "mixed"},
    "spec": {
        "template": {
            "spec": {
                "requirements": [
                    {"key": "karpenter.sh/capacity-type", "operator": "In",
                     "values": ["on-demand"]},
                    {"key": "karpenter.k8s.aws/instance-category", "operator": "In",
                     "values": ["c", "m"]},
                ],
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                 "name": "default"},
            }
        },
        "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "1h"},
    },
}  # fmt: skip


def deployment(name: str, replicas: int, cpu: str, **spec: Any) -> dict[str, Any]:
    """A Deployment of ``replicas`` pods labelled ``app: name`` requesting ``cpu``."""
    container = {"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [container], **spec},
            },
        },
    }


AFFINITY = {
    "podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "topology.kubernetes.io/zone",
             "labelSelector": {"matchLabels": {"app": "db"}}},
        ]
    }
}  # fmt: skip


def simulate(tmp_path: Path, strategy: Strategy, *manifests: dict[str, Any]) -> World:
    document = {
        "apiVersion": "driftwave.io/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "requeue"},
        "spec": {
            "cluster": {
                "name": "demo",
                "region": "us-east-1",
                "zones": ["us-east-1a", "us-east-1b", "us-east-1c"],
                "kubernetesVersion": "1.30",
            },
            "manifests": [NODECLASS, POOL, *manifests],
            "until": "3m",
        },
    }
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(document))
    scenario, objects = load_scenario(path)
    return run(build_world(scenario, objects, seed=1, strategy=strategy), scenario)


def timeline(world: World, kind: str) -> list[dict[str, Any]]:
    return [e for e in report(world)["timeline"] if e["type"] == kind]


@pytest.mark.parametrize("strategy", ["karpenter", "driftwave"])
def test_pods_with_affinity_to_their_batch_are_placed_by_a_later_solve(
    tmp_path: Path, strategy: Strategy
) -> None:
    world = simulate(
        tmp_path,
        strategy,
        deployment("db", 2, "1"),
        deployment("api", 3, "2", affinity=AFFINITY),
    )
    summary = report(world)["summary"]
    assert summary["pendingPods"] == 0
    assert summary["scheduledPods"] == 5
    solves = timeline(world, "Provisioned")
    if strategy == "karpenter":
        # the first solve cannot place the api pods (the db claim has no zone yet); the
        # requeue 10 s later (and the batch's idle second) solves them
        assert [s["t"] for s in solves] == [1.0, 12.0]
        assert [s["details"]["unschedulable"] for s in solves] == [3, 0]


def test_pods_that_stay_pending_are_retried_and_reported_once(tmp_path: Path) -> None:
    world = simulate(tmp_path, "karpenter", deployment("huge", 1, "5000"))
    solves = timeline(world, "Provisioned")
    assert len(solves) > 10  # every ~11 s for 3 minutes
    assert all(s["details"]["unschedulable"] == 1 for s in solves)
    # the same reason for the same pod is reported once per 5 minutes, as Karpenter's recorder
    assert len(timeline(world, "FailedScheduling")) == 1
    assert report(world)["summary"]["pendingPods"] == 1
