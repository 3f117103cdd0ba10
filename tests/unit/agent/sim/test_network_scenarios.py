"""The simulated VPC in scenarios: subnet and security-group drift, and the network's validation."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent.sim.scenario_run import ScenarioError, load_scenario
from agent.sim.simulate import simulate

DISCOVERY = {"karpenter.sh/discovery": "c"}
NETWORK: dict[str, Any] = {
    "subnets": [
        {"id": "subnet-0a1", "zone": "us-east-1a", "tags": DISCOVERY},
        {"id": "subnet-0a2", "zone": "us-east-1a", "tags": {"spare": "yes"}},
    ],
    "securityGroups": [
        {"id": "sg-0a1", "name": "nodes", "tags": DISCOVERY},
        {"id": "sg-0b2", "name": "extra", "tags": {"role": "extra"}},
    ],
}
NODECLASS: dict[str, Any] = {
    "apiVersion": "karpenter.k8s.aws/v1",
    "kind": "EC2NodeClass",
    "metadata": {"name": "default"},
    "spec": {
        "amiSelectorTerms": [{"tags": {"env": "prod"}}],
        "amiFamily": "AL2023",
        "role": "node-role",
        "subnetSelectorTerms": [{"tags": DISCOVERY}],
        "securityGroupSelectorTerms": [{"tags": DISCOVERY}],
    },
}
POOL: dict[str, Any] = {
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
                "requirements": [
                    {"key": "karpenter.sh/capacity-type", "operator": "In",
                     "values": ["on-demand"]},
                    {"key": "node.kubernetes.io/instance-type", "operator": "In",
                     "values": ["m6i.large"]},
                ],
            }
        },
        "disruption": {"consolidateAfter": "Never"},
    },
}  # fmt: skip
WEB: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web"},
    "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "web",
                                     "resources": {"requests": {"cpu": "500m"}}}]},
        },
    },
}  # fmt: skip
GOLDEN = {"id": "ami-0aa0", "name": "golden-1", "family": "AL2023",
          "created": "2025-12-01T00:00:00Z", "tags": {"env": "prod"}}  # fmt: skip


def _document(events: list[dict[str, Any]], network: dict[str, Any] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "cluster": {"name": "c", "kubernetesVersion": "1.31", "zones": ["us-east-1a"]},
        "amis": [GOLDEN],
        "manifests": [NODECLASS, POOL, WEB],
        "events": events,
        "until": "20m",
    }
    if network is not None:
        spec["network"] = network
    return {"apiVersion": "driftwave.io/v1alpha1", "kind": "Scenario",
            "metadata": {"name": "t"}, "spec": spec}  # fmt: skip


def _run(
    tmp_path: Path, events: list[dict[str, Any]], network: dict[str, Any] | None = NETWORK
) -> dict[str, Any]:
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(_document(events, network)))
    return simulate(path)


def _drifts(result: dict[str, Any]) -> list[str]:
    return [e["reason"] for e in result["timeline"] if e["type"] == "Drifted"]


def _class_with(**spec: Any) -> dict[str, Any]:
    changed = copy.deepcopy(NODECLASS)
    changed["spec"].update(spec)
    return changed


def test_nodes_launch_into_the_selected_subnet_with_the_selected_groups(tmp_path: Path) -> None:
    result = _run(tmp_path, [])
    (claim,) = result["nodeClaims"]
    assert claim["subnetId"] == "subnet-0a1"
    assert claim["securityGroupIds"] == ["sg-0a1"]
    assert _drifts(result) == []


def test_new_security_group_terms_drift_the_node_and_its_replacement_uses_them(
    tmp_path: Path,
) -> None:
    both = [{"tags": DISCOVERY}, {"name": "extra"}]
    result = _run(tmp_path, [{"at": "5m", "apply": _class_with(securityGroupSelectorTerms=both)}])
    assert _drifts(result) == ["SecurityGroupDrift"]
    (claim,) = result["nodeClaims"]
    assert claim["securityGroupIds"] == ["sg-0a1", "sg-0b2"]
    assert claim["drifted"] is None


def test_retagging_a_security_group_drifts_the_nodes_that_use_it(tmp_path: Path) -> None:
    retag = {"tag": [{"id": "sg-0b2", "tags": DISCOVERY}]}
    result = _run(tmp_path, [{"at": "5m", "network": retag}])
    assert _drifts(result) == ["SecurityGroupDrift"]
    assert result["nodeClaims"][0]["securityGroupIds"] == ["sg-0a1", "sg-0b2"]


def test_a_subnet_no_longer_selected_drifts_its_nodes(tmp_path: Path) -> None:
    events = [
        {"at": "5m", "network": {"tag": [{"id": "subnet-0a2", "tags": DISCOVERY}]}},
        {"at": "6m", "network": {"tag": [{"id": "subnet-0a1", "tags": {}}]}},
    ]
    result = _run(tmp_path, events)
    assert _drifts(result) == ["SubnetDrift"]
    (claim,) = result["nodeClaims"]
    assert claim["subnetId"] == "subnet-0a2"


def test_new_subnet_terms_that_exclude_the_nodes_subnet_drift_it(tmp_path: Path) -> None:
    terms = [{"id": "subnet-0a2"}]
    result = _run(tmp_path, [{"at": "5m", "apply": _class_with(subnetSelectorTerms=terms)}])
    assert _drifts(result) == ["SubnetDrift"]
    assert result["nodeClaims"][0]["subnetId"] == "subnet-0a2"


def test_a_subnet_added_to_the_selection_drifts_nothing(tmp_path: Path) -> None:
    added = {"addSubnets": [{"id": "subnet-0a3", "zone": "us-east-1a", "tags": DISCOVERY}]}
    result = _run(tmp_path, [{"at": "5m", "network": added}])
    assert _drifts(result) == []
    assert result["nodeClaims"][0]["subnetId"] == "subnet-0a1"


def test_removing_every_selected_subnet_drifts_nothing_and_launches_nothing(
    tmp_path: Path,
) -> None:
    result = _run(tmp_path, [{"at": "5m", "network": {"remove": ["subnet-0a1"]}}])
    assert _drifts(result) == []


def test_without_a_declared_network_every_term_selects_the_open_vpc(tmp_path: Path) -> None:
    other = [{"tags": {"anything": "*"}}]
    events = [{"at": "5m", "apply": _class_with(securityGroupSelectorTerms=other)}]
    result = _run(tmp_path, events, network=None)
    assert _drifts(result) == []
    (claim,) = result["nodeClaims"]
    assert (claim["subnetId"], claim["securityGroupIds"]) == ("subnet-00000001", ["sg-00000001"])


@pytest.mark.parametrize(
    ("network", "events", "field", "rule"),
    [
        (None, [{"at": "1m", "network": {"remove": ["sg-0a1"]}}],
         "spec.events[0].network", "needs spec.network"),
        (NETWORK, [{"at": "1m", "network": {"remove": ["sg-0ff"]}}],
         "spec.events[0].network.remove[0]", "no subnet or security group sg-0ff"),
        (NETWORK, [{"at": "1m", "network": {"tag": [{"id": "subnet-0ff", "tags": {}}]}}],
         "spec.events[0].network.tag[0].id", "no subnet or security group subnet-0ff"),
        (NETWORK, [{"at": "1m", "network": {"addSecurityGroups": [{"id": "sg-0a1", "name": "x"}]}}],
         "spec.events[0].network.addSecurityGroups[0].id", "already exists"),
        (NETWORK, [{"at": "1m", "network": {"addSubnets": [{"id": "subnet-0b",
                                                             "zone": "us-west-2a"}]}}],
         "spec.events[0].network.addSubnets[0].zone", "spec.cluster.zones"),
        (NETWORK, [{"at": "1m", "network": {}}], "spec.events[0].network", "changes something"),
        ({"subnets": [{"id": "net-1", "zone": "us-east-1a"}]}, [],
         "spec.network.subnets[0].id", "a subnet id"),
        ({"subnets": [{"id": "subnet-1", "zone": "us-east-1a"}],
          "securityGroups": [{"id": "sg-1", "name": "a"}, {"id": "sg-1", "name": "b"}]}, [],
         "spec.network.securityGroups[1].id", "ids are unique"),
    ],
)  # fmt: skip
def test_network_mistakes_name_the_field_and_the_rule(
    tmp_path: Path,
    network: dict[str, Any] | None,
    events: list[dict[str, Any]],
    field: str,
    rule: str,
) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(_document(events, network)))
    with pytest.raises(ScenarioError) as raised:
        load_scenario(path)
    found = [(f.path, f.message) for f in raised.value.findings]
    assert any(where == field and rule in message for where, message in found), found
