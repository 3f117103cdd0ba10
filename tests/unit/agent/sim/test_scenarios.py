"""Scenarios end to end: the seed walkthroughs, bad input, pods nobody can hold, faults."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from agent.sim.scenario_run import ScenarioError
from agent.sim.simulate import simulate

ROOT = Path(__file__).resolve().parents[4]
SCENARIOS = ROOT / "agent" / "examples" / "scenarios"


def test_seed_000_puts_both_inflate_pods_on_one_cmr_node_of_generation_above_2() -> None:
    result = simulate(SCENARIOS / "seed-000-inflate.yaml")
    (claim,) = result["nodeClaims"]
    assert len(claim["pods"]) == 2
    assert claim["state"] == "Initialized"
    family = claim["instanceType"].split(".")[0]
    assert family[0] in "cmr"
    assert int("".join(ch for ch in family if ch.isdigit())) > 2
    assert result["pendingPods"] == []
    assert result["costPerHour"] > 0


def test_a_claim_reports_what_it_carries_as_karpenter_tests_check_it() -> None:
    (claim,) = simulate(SCENARIOS / "seed-000-inflate.yaml")["nodeClaims"]
    labels = claim["labels"]
    assert labels["karpenter.sh/nodepool"] == claim["nodePool"]
    assert labels["node.kubernetes.io/instance-type"] == claim["instanceType"]
    assert labels["team"] == "my-team", "the template's own label"
    assert set(claim["annotations"]) >= {
        "karpenter.sh/nodepool-hash",
        "karpenter.sh/nodepool-hash-version",
        "karpenter.k8s.aws/ec2nodeclass-hash",
        "karpenter.k8s.aws/ec2nodeclass-hash-version",
    }
    keys = {r["key"] for r in claim["requirements"]}
    assert {"karpenter.sh/nodepool", "node.kubernetes.io/instance-type"} <= keys
    assert all(set(r) >= {"key", "operator"} for r in claim["requirements"])
    assert claim["taints"] == []
    assert claim["startupTaints"] == []


def test_seed_002_puts_three_pods_on_one_on_demand_arm64_r6gd_in_us_west_2a() -> None:
    result = simulate(SCENARIOS / "seed-002-layered-constraints.yaml")
    (claim,) = result["nodeClaims"]
    assert (claim["instanceType"], claim["capacityType"], claim["zone"]) == (
        "r6gd.xlarge",
        "on-demand",
        "us-west-2a",
    )
    assert len(claim["pods"]) == 3
    types = [event["type"] for event in result["timeline"]]
    assert types.index("Scaled") < types.index("CreatedNodeClaim") < types.index("Initialized")


def _scenario(tmp_path: Path, spec: dict[str, Any]) -> Path:
    path = tmp_path / "scenario.yaml"
    document = {
        "apiVersion": "driftwave.io/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "t"},
        "spec": spec,
    }
    path.write_text(yaml.safe_dump(document))
    return path


def _base(**extra: Any) -> dict[str, Any]:
    return {
        "cluster": {"name": "c", "kubernetesVersion": "1.30"},
        "manifestFiles": [
            str(ROOT / "agent" / "examples" / "v1" / "seed-000-drift-walkthrough.yaml")
        ],
        "until": "3m",
        **extra,
    }


def test_a_pod_no_nodepool_can_hold_is_pending_with_the_reason(tmp_path: Path) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "mainframe", "namespace": "default"},
        "spec": {
            "nodeSelector": {"team": "my-team", "kubernetes.io/arch": "s390x"},
            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}],
        },
    }
    result = simulate(_scenario(tmp_path, _base(manifests=[pod])))
    (pending,) = result["pendingPods"]
    assert pending["pod"] == "default/mainframe"
    assert 'incompatible with nodepool "default"' in pending["reason"]
    assert "kubernetes.io/arch" in pending["reason"]


def test_insufficient_capacity_moves_the_launch_to_another_offering(tmp_path: Path) -> None:
    fault = {"at": "0s", "fault": {"insufficientCapacity": {"instanceType": "c6g.xlarge"}}}
    result = simulate(_scenario(tmp_path, _base(events=[fault])))
    (claim,) = result["nodeClaims"]
    assert claim["instanceType"] != "c6g.xlarge"
    assert len(claim["pods"]) == 2


def test_nodes_of_a_faulty_image_never_become_ready(tmp_path: Path) -> None:
    result = simulate(
        _scenario(tmp_path, _base()),
    )
    image = result["nodeClaims"][0]["imageId"]
    faulty = simulate(
        _scenario(tmp_path, _base(events=[{"at": "0s", "fault": {"faultyAmi": image}}]))
    )
    (claim,) = faulty["nodeClaims"]
    assert claim["state"] == "Registered"
    assert claim["pods"] == []
    assert all("waiting for nodeclaim" in p["reason"] for p in faulty["pendingPods"])
    assert len(faulty["pendingPods"]) == 2


def test_an_invalid_scenario_reports_findings_in_the_validate_format(tmp_path: Path) -> None:
    path = _scenario(tmp_path, {"cluster": {"name": "c", "zones": []}, "until": "soon"})
    with pytest.raises(ScenarioError) as caught:
        simulate(path)
    paths = {f.path for f in caught.value.findings}
    assert {"spec.cluster.zones", "spec.until"} <= paths
    assert str(caught.value.findings[0]).startswith(f"{path}:1 Scenario/t: ")


def test_an_invalid_manifest_in_a_scenario_is_reported(tmp_path: Path) -> None:
    bad = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "x"},
        "spec": {"weight": 0},
    }
    with pytest.raises(ScenarioError) as caught:
        simulate(_scenario(tmp_path, _base(manifests=[bad])))
    assert any(f.path == "spec.manifests[0].spec.template" for f in caught.value.findings)


def test_a_missing_manifest_file_is_named(tmp_path: Path) -> None:
    spec = _base()
    spec["manifestFiles"] = ["nope.yaml"]
    with pytest.raises(ScenarioError, match=r"cannot read nope\.yaml"):
        simulate(_scenario(tmp_path, spec))


def test_same_seed_same_outcome() -> None:
    first = simulate(SCENARIOS / "seed-000-inflate.yaml", seed=3)
    second = simulate(SCENARIOS / "seed-000-inflate.yaml", seed=3)
    assert first == second


def test_daemonset_pods_run_on_the_nodes_the_world_launches(tmp_path: Path) -> None:
    daemonset = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "logs", "namespace": "kube-system"},
        "spec": {
            "selector": {"matchLabels": {"app": "logs"}},
            "template": {
                "metadata": {"labels": {"app": "logs"}},
                "spec": {
                    "containers": [
                        {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}
                    ]
                },
            },
        },
    }
    result = simulate(_scenario(tmp_path, _base(manifests=[daemonset])))
    (claim,) = result["nodeClaims"]
    assert claim["state"] == "Initialized"
    daemons = [p for p in claim["pods"] if p.startswith("kube-system/logs-")]
    assert len(daemons) == 1
    assert len(claim["pods"]) == 3
    assert result["pendingPods"] == []
