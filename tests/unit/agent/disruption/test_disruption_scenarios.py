"""Disruption end to end on the simulated cluster: the seed examples and each method."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from agent.sim.simulate import simulate

ROOT = Path(__file__).resolve().parents[4]
SCENARIOS = ROOT / "agent" / "examples" / "scenarios"
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
GOLDEN = {"id": "ami-0aa0", "name": "golden-1", "family": "AL2023",
          "created": "2025-12-01T00:00:00Z", "tags": {"env": "prod"}}  # fmt: skip
NEWER = {"id": "ami-0bb0", "name": "golden-2", "family": "AL2023",
         "created": "2025-12-20T00:00:00Z", "tags": {"env": "prod"}}  # fmt: skip


def _events(result: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [e for e in result["timeline"] if e["type"] == kind]


def _pool(disruption: dict[str, Any], **template: Any) -> dict[str, Any]:
    spec = {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
        "requirements": [
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
            {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m6i.xlarge"]},
        ],
        **template,
    }
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "default"},
        "spec": {"template": {"spec": spec}, "disruption": disruption},
    }


def _deployment(name: str, replicas: int, cpu: str, **pod: Any) -> dict[str, Any]:
    template: dict[str, Any] = {
        "metadata": {"labels": {"app": name}},
        "spec": {
            "containers": [{"name": name, "image": name, "resources": {"requests": {"cpu": cpu}}}],
            **pod,
        },
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": template},
    }  # fmt: skip


def _run(tmp_path: Path, manifests: list[dict[str, Any]], events: list[dict[str, Any]],
         until: str, amis: list[dict[str, Any]] | None = None) -> dict[str, Any]:  # fmt: skip
    document = {
        "apiVersion": "driftwave.io/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "t"},
        "spec": {
            "cluster": {"name": "c", "kubernetesVersion": "1.31", "zones": ["us-east-1a"]},
            "amis": amis if amis is not None else [GOLDEN],
            "manifests": manifests,
            "events": events,
            "until": until,
        },
    }
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(document))
    return simulate(path)


def test_seed_000_upgrade_launches_the_replacement_before_draining_the_old_node() -> None:
    result = simulate(SCENARIOS / "seed-000-drift-upgrade.yaml")
    (drifted,) = _events(result, "Drifted")
    assert drifted["reason"] == "AMIDrift"
    assert drifted["t"] == 600
    started = _events(result, "DisruptionStarted")[0]
    replacement = started["details"]["replacements"][0]
    ready = next(
        e for e in _events(result, "Initialized") if e["object"] == f"nodeclaim/{replacement}"
    )
    first_eviction = _events(result, "Evicted")[0]
    assert started["t"] <= ready["t"] <= first_eviction["t"]
    (claim,) = result["nodeClaims"]
    assert claim["name"] == replacement
    assert len(claim["pods"]) == 2
    images = result["summary"]["nodesPerImage"]
    assert images[0]["nodes"] != images[-1]["nodes"]
    assert result["summary"]["podsLost"] == 0


def test_seed_001_a_pinned_id_never_moves_until_the_pin_changes() -> None:
    result = simulate(SCENARIOS / "seed-001-pinned-id.yaml")
    drifted = _events(result, "Drifted")
    assert drifted
    assert all(e["t"] == 1800 for e in drifted)  # not at the upgrade (600) nor the publish (1200)
    assert {c["imageId"] for c in result["nodeClaims"]} == {"ami-0f1e2d3c4b5a69788"}
    pools = result["summary"]["nodePools"]
    assert pools["default"]["maxConcurrentDisruptions"] == 1
    assert pools["default"]["disrupted"] == {"drift/Drifted": 4}


def test_seed_001_budget_blocks_drift_outside_working_hours() -> None:
    result = simulate(SCENARIOS / "seed-001-budget-hours.yaml")
    assert {e["t"] for e in _events(result, "Drifted")} == {5400.0}  # 17:30 Monday
    starts = [e["t"] for e in _events(result, "DisruptionStarted")]
    assert len(starts) == 6
    assert min(starts) == 61200.0  # 09:00 Tuesday: 17h after the 16:00 start
    assert result["summary"]["nodePools"]["default"]["maxConcurrentDisruptions"] == 1
    assert {c["imageId"] for c in result["nodeClaims"]} == {"ami-0bb22cc33dd44ee55"}


def test_seed_002_pdb_slows_the_drain_and_is_never_broken() -> None:
    result = simulate(SCENARIOS / "seed-002-pdb-upgrade.yaml")
    blocked = _events(result, "EvictionBlocked")
    assert blocked
    assert all(e["details"]["budget"] == "inflate-pdb" for e in blocked)
    evictions = _events(result, "Evicted")
    assert len(evictions) == 3
    assert evictions[-1]["t"] > evictions[0]["t"]
    assert result["summary"]["pdbViolations"] == 0
    assert result["summary"]["pendingPods"] == 0


def test_do_not_disrupt_holds_a_node_and_termination_grace_period_bounds_the_wait() -> None:
    result = simulate(SCENARIOS / "do-not-disrupt.yaml")
    pools = result["summary"]["nodePools"]
    assert pools["batch"]["disrupted"] == {}
    assert pools["reports"]["disrupted"] == {"drift/Drifted": 1}
    train_node = next(c for c in result["nodeClaims"] if any("train" in p for p in c["pods"]))
    assert train_node["nodePool"] == "batch"
    disrupted_nodes = {e["object"] for e in _events(result, "Disrupted")}
    assert f"node/{train_node['node']}" not in disrupted_nodes
    (forced,) = _events(result, "PodDeleted")
    assert forced["object"].startswith("pod/default/report-")
    reports = next(e for e in _events(result, "Disrupted") if e["details"]["nodepool"] == "reports")
    assert forced["t"] - reports["t"] == 1200  # terminationGracePeriod: 20m


def test_expiration_replaces_nodes_regardless_of_budgets(tmp_path: Path) -> None:
    result = _run(
        tmp_path,
        [_pool({"budgets": [{"nodes": "0"}], "consolidateAfter": "Never"}, expireAfter="1h"),
         NODECLASS, _deployment("web", 2, "1")],
        [],
        "1h30m",
    )  # fmt: skip
    expired = _events(result, "Expired")
    assert len(expired) == 1
    assert 3600 <= expired[0]["t"] < 3700
    assert not _events(result, "DisruptionStarted")
    assert result["summary"]["pendingPods"] == 0
    assert result["summary"]["scheduledPods"] == 2


def test_emptiness_deletes_an_empty_node_after_consolidate_after_and_validation(
    tmp_path: Path,
) -> None:
    result = _run(
        tmp_path,
        [_pool({"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30s"}), NODECLASS,
         _deployment("web", 2, "1")],
        [{"at": "5m", "scale": {"kind": "Deployment", "name": "web", "namespace": "default",
                                "replicas": 0}}],
        "10m",
    )  # fmt: skip
    (started,) = _events(result, "DisruptionStarted")
    assert started["details"]["method"] == "emptiness"
    assert started["t"] >= 300 + 30 + 15
    assert result["nodeClaims"] == []


def test_single_node_consolidation_removes_an_underutilized_node(tmp_path: Path) -> None:
    result = _run(
        tmp_path,
        [_pool({"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "1m"}),
         NODECLASS, _deployment("web", 6, "1")],
        [{"at": "5m", "scale": {"kind": "Deployment", "name": "web", "namespace": "default",
                                "replicas": 3}}],
        "15m",
    )  # fmt: skip
    methods = {e["details"]["method"] for e in _events(result, "DisruptionStarted")}
    assert methods & {"single-node-consolidation", "multi-node-consolidation", "emptiness"}
    assert len(result["nodeClaims"]) == 1
    assert result["summary"]["scheduledPods"] == 3


def test_a_faulty_image_halts_drift_without_draining_any_node(tmp_path: Path) -> None:
    faulty = {**NEWER, "faulty": True}
    fixed = {**NEWER, "id": "ami-0cc0", "name": "golden-3", "created": "2025-12-28T00:00:00Z"}
    result = _run(
        tmp_path,
        [_pool({"budgets": [{"nodes": "100%"}], "consolidateAfter": "Never"}), NODECLASS,
         _deployment("web", 9, "1")],
        [{"at": "5m", "publishAmi": faulty}, {"at": "1h30m", "publishAmi": fixed}],
        "2h30m",
    )  # fmt: skip
    (halt,) = _events(result, "DriftHalted")
    assert halt["object"] == "nodepool/default"
    failures_before_halt = [e for e in _events(result, "DisruptionFailed") if e["t"] <= halt["t"]]
    assert len(failures_before_halt) >= 1
    before_fix = [e for e in _events(result, "Disrupted") if e["t"] < 5400]
    assert before_fix == []  # no old node was drained onto the faulty image
    (resumed,) = _events(result, "DriftResumed")
    assert resumed["t"] == 5400
    assert {c["imageId"] for c in result["nodeClaims"]} == {"ami-0cc0"}
    assert result["summary"]["podsLost"] == 0
    assert result["summary"]["pendingPods"] == 0


def test_a_node_is_in_one_disruption_command_at_a_time(tmp_path: Path) -> None:
    spread = {
        "topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
             "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "web"}}}
        ]
    }  # fmt: skip
    result = _run(
        tmp_path,
        [_pool({"budgets": [{"nodes": "5"}], "consolidateAfter": "Never"}), NODECLASS,
         _deployment("web", 3, "3", **spread)],
        [{"at": "5m", "publishAmi": NEWER}],
        "30m",
    )  # fmt: skip
    taken = [n for e in _events(result, "DisruptionStarted") for n in e["details"]["candidates"]]
    assert len(taken) == 3
    assert len(set(taken)) == 3
    assert {c["imageId"] for c in result["nodeClaims"]} == {"ami-0bb0"}
    assert result["summary"]["nodePools"]["default"]["maxConcurrentDisruptions"] == 3


def test_drift_with_a_grace_period_launches_no_replacement_for_pods_that_will_not_move(
    tmp_path: Path,
) -> None:
    """Karpenter's drift with ``terminationGracePeriod``: a node whose pods cannot be evicted (an
    active do-not-disrupt, a budget with ``maxUnavailable: 0``) is still taken, but no room is
    planned for those pods (they stay until the grace period ends); evictable pods still get
    their replacement."""
    keep = _deployment("keep", 1, "3")
    keep["spec"]["template"]["metadata"]["annotations"] = {"karpenter.sh/do-not-disrupt": "true"}
    guarded_pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "guarded"},
        "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "guarded"}}},
    }
    disruption = {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30s",
                  "budgets": [{"nodes": "100%"}]}  # fmt: skip
    result = _run(
        tmp_path,
        [_pool(disruption, terminationGracePeriod="30m"), NODECLASS, _deployment("web", 1, "3"),
         keep, _deployment("guarded", 1, "3"), guarded_pdb],
        [{"at": "5m", "publishAmi": NEWER}],
        "50m",
    )  # fmt: skip
    node_of = {e["object"].split("/")[2].split("-")[0]: e["details"]["node"]
               for e in _events(result, "Evicted") + _events(result, "PodDeleted")}  # fmt: skip
    assert set(node_of) == {"web", "keep", "guarded"}
    forced = {e["object"].split("/")[2].split("-")[0] for e in _events(result, "PodDeleted")}
    assert forced == {"keep", "guarded"}  # never evicted: deleted when the grace period ended
    started = {e["details"]["candidates"][0]: e for e in _events(result, "DisruptionStarted")}
    assert {e["details"]["method"] for e in started.values()} == {"drift"}  # no emptiness
    assert started[node_of["keep"]]["details"]["replacements"] == []
    assert started[node_of["guarded"]]["details"]["replacements"] == []
    assert len(started[node_of["web"]]["details"]["replacements"]) == 1
    assert all(e["t"] == 300 for e in started.values())  # the held nodes were taken at once
    assert result["summary"]["podsLost"] == 0
    assert result["summary"]["pdbViolations"] == 0
    assert result["summary"]["pendingPods"] == 0
