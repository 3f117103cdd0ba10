"""Drift of nodes whose pods spread over zones: a node whose pod would have nowhere to go is
held (never deleted at the cost of the pod), and replacements land one per zone."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from agent.sim.simulate import simulate

DISCOVERY = {"karpenter.sh/discovery": "demo"}
SELECTED = [{"tags": DISCOVERY}]
NODECLASS: dict[str, Any] = {
    "apiVersion": "karpenter.k8s.aws/v1",
    "kind": "EC2NodeClass",
    "metadata": {"name": "default"},
    "spec": {
        "amiSelectorTerms": [{"alias": "al2023@v20251202"}],
        "role": "KarpenterNodeRole-demo",
        "subnetSelectorTerms": SELECTED,
        "securityGroupSelectorTerms": SELECTED,
    },
}
POOL: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "np"},
    "spec": {
        "template": {"spec": {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                             "name": "default"},
            "requirements": [
                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                {"key": "node.kubernetes.io/instance-type", "operator": "In",
                 "values": ["m6i.xlarge"]},
            ],
        }},
        "disruption": {"consolidateAfter": "Never", "budgets": [{"nodes": "100%"}]},
    },
}  # fmt: skip
WEB: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web"},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "topologySpreadConstraints": [{
                    "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": "web"}},
                }],
                "containers": [{"name": "web", "image": "nginx",
                                "resources": {"requests": {"cpu": "3"}}}],
            },
        },
    },
}  # fmt: skip
NETWORK: dict[str, Any] = {
    "subnets": [
        {"id": "subnet-0a1", "zone": "us-east-1a", "tags": DISCOVERY},
        {"id": "subnet-0b1", "zone": "us-east-1b", "tags": DISCOVERY},
    ],
    "securityGroups": [
        {"id": "sg-0aaa", "name": "nodes", "tags": DISCOVERY},
        {"id": "sg-0ccc", "name": "other", "tags": {}},
    ],
}


def _class_with(**spec: Any) -> dict[str, Any]:
    changed = copy.deepcopy(NODECLASS)
    changed["spec"].update(spec)
    return changed


def _run(tmp_path: Path, events: list[dict[str, Any]]) -> dict[str, Any]:
    document = {
        "apiVersion": "driftwave.io/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "drift-zone-spread"},
        "spec": {
            "cluster": {"name": "demo", "zones": ["us-east-1a", "us-east-1b"],
                        "kubernetesVersion": "1.30"},
            "network": NETWORK,
            "manifests": [POOL, NODECLASS, WEB],
            "events": events,
            "until": "40m",
        },
    }  # fmt: skip
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(document))
    return simulate(path)


def _events(result: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [e for e in result["timeline"] if e["type"] == kind]


def _zones(result: dict[str, Any]) -> dict[str, str]:
    """NodeClaim → the zone it launched in."""
    return {
        e["object"].removeprefix("nodeclaim/"): e["details"]["zone"]
        for e in _events(result, "Launched")
    }


def test_drift_holds_a_node_whose_pod_would_have_nowhere_to_go(tmp_path: Path) -> None:
    """Only us-east-1b's subnet is selected, then every node drifts: the us-east-1a node's pod
    could go nowhere (its zone has no subnet, the spread keeps it out of us-east-1b), so drift
    replaces the us-east-1b node and holds the other one, saying why; no pod is left pending."""
    only_b = [{"id": "subnet-0b1"}]
    result = _run(
        tmp_path,
        [
            {"at": "5m", "apply": _class_with(subnetSelectorTerms=only_b)},
            {"at": "20m", "apply": _class_with(
                subnetSelectorTerms=only_b,
                securityGroupSelectorTerms=[{"name": "nodes"}, {"id": "sg-0ccc"}],
            )},
        ],
    )  # fmt: skip
    zones = _zones(result)
    started = _events(result, "DisruptionStarted")
    assert [e["details"]["replacements"] != [] for e in started] == [True]
    (only,) = started
    assert [zones[r] for r in only["details"]["replacements"]] == ["us-east-1b"]
    assert not _events(result, "FailedScheduling")
    summary = result["summary"]
    assert (summary["pods"], summary["scheduledPods"], summary["pendingPods"]) == (2, 2, 0)
    assert summary["nodes"] == 2
    held = _events(result, "DisruptionBlocked")
    assert held, "the held node is reported"
    assert all("would not schedule" in e["reason"] for e in held)
    held_nodes = {e["object"] for e in held}
    assert held_nodes.isdisjoint({f"node/{n}" for n in only["details"]["candidates"]})


def test_drift_replacements_keep_the_zone_spread(tmp_path: Path) -> None:
    """Both nodes (one per zone) drift at once: their replacements land one per zone, and no
    third node is launched."""
    nodes2 = {"id": "sg-0bbb", "name": "nodes2", "tags": DISCOVERY}
    result = _run(tmp_path, [{"at": "20m", "network": {"addSecurityGroups": [nodes2]}}])
    zones = _zones(result)
    started = _events(result, "DisruptionStarted")
    replacements = [r for e in started for r in e["details"]["replacements"]]
    assert len(started) == 2
    assert sorted(zones[r] for r in replacements) == ["us-east-1a", "us-east-1b"]
    assert len(zones) == 4, "two first nodes and two replacements, nothing more"
    summary = result["summary"]
    assert (summary["nodes"], summary["scheduledPods"], summary["pendingPods"]) == (2, 2, 0)
