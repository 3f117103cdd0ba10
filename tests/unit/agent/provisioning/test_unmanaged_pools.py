"""A NodePool whose ``nodeClassRef`` names another kind than EC2NodeClass belongs to another
provisioner: the agent launches nothing for it, as Karpenter's AWS provider ignores NodePools it
does not manage (their pods wait, for the provisioner that owns them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from agent.api.nodeclaim import NodeClaim
from agent.sim.report import report
from agent.sim.scenario_run import build_world, load_scenario, run
from tests.unit.agent.provisioning.test_custom_labels import IMAGE, NODECLASS, _deployment


def _pool(group: str, kind: str) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "default"},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {"group": group, "kind": kind, "name": "default"},
                    "requirements": [
                        {"key": "karpenter.sh/capacity-type", "operator": "In",
                         "values": ["on-demand"]},
                    ],
                }
            }
        },
    }  # fmt: skip


def _claims(tmp_path: Path, pool: dict[str, Any]) -> tuple[int, int]:
    document = {
        "apiVersion": "driftwave.io/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "unmanaged"},
        "spec": {
            "cluster": {"name": "c", "kubernetesVersion": "1.31", "zones": ["us-east-1a"]},
            "amis": [IMAGE],
            "manifests": [pool, NODECLASS, _deployment("web", 2)],
            "until": "5m",
        },
    }
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(document))
    scenario, objects = load_scenario(path)
    world = run(build_world(scenario, objects, seed=1), scenario)
    return len(world.cluster.list(NodeClaim)), report(world)["summary"]["pendingPods"]


def test_a_pool_of_another_node_class_kind_gets_no_nodes(tmp_path: Path) -> None:
    assert _claims(tmp_path, _pool("karpenter.k8s.aws", "EC2NodeClass"))[0] >= 1
    assert _claims(tmp_path, _pool("karpenter.test.sh", "UnmanagedNodeClass")) == (0, 2)
