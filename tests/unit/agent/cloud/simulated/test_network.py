"""The simulated VPC: selector terms resolve as Karpenter documents them, and the VPC changes."""

from __future__ import annotations

import pytest

from agent.cloud.simulated.network import (
    NetworkError,
    SimulatedNetwork,
    SimulatedSecurityGroup,
    SimulatedSubnet,
)
from common.selectors import SecurityGroupSelectorTerm, SubnetSelectorTerm


def _vpc() -> SimulatedNetwork:
    return SimulatedNetwork(
        [
            SimulatedSubnet("subnet-0b", "us-east-1b", {"tier": "private", "team": "a"}),
            SimulatedSubnet("subnet-0a", "us-east-1a", {"tier": "private"}),
            SimulatedSubnet("subnet-0c", "us-east-1c", {"tier": "public"}),
        ],
        [
            SimulatedSecurityGroup("sg-02", "nodes", {"role": "nodes"}),
            SimulatedSecurityGroup("sg-01", "extra", {}),
        ],
    )


def _subnets(vpc: SimulatedNetwork, *terms: dict[str, object]) -> list[str]:
    found = vpc.resolve_subnets([SubnetSelectorTerm.model_validate(t) for t in terms])
    return [s.id for s in found]


def _groups(vpc: SimulatedNetwork, *terms: dict[str, object]) -> list[str]:
    found = vpc.resolve_security_groups(
        [SecurityGroupSelectorTerm.model_validate(t) for t in terms]
    )
    return [g.id for g in found]


def test_terms_are_ored_and_tags_anded() -> None:
    vpc = _vpc()
    assert _subnets(vpc, {"tags": {"tier": "private"}}) == ["subnet-0a", "subnet-0b"]
    assert _subnets(vpc, {"tags": {"tier": "private", "team": "a"}}) == ["subnet-0b"]
    assert _subnets(vpc, {"tags": {"tier": "public"}}, {"id": "subnet-0a"}) == [
        "subnet-0a",
        "subnet-0c",
    ]
    assert _subnets(vpc, {"tags": {"tier": "public", "team": "a"}}) == []


def test_a_wildcard_value_needs_only_the_key() -> None:
    vpc = _vpc()
    assert _subnets(vpc, {"tags": {"team": "*"}}) == ["subnet-0b"]
    assert _groups(vpc, {"tags": {"role": "*"}}) == ["sg-02"]


def test_security_groups_by_name_id_and_tags() -> None:
    vpc = _vpc()
    assert _groups(vpc, {"name": "extra"}) == ["sg-01"]
    assert _groups(vpc, {"id": "sg-02"}, {"name": "extra"}) == ["sg-01", "sg-02"]
    assert _groups(vpc, {"name": "missing"}) == []


def test_the_open_vpc_gives_every_term_everything() -> None:
    vpc = SimulatedNetwork.open(["us-east-1a", "us-east-1b"])
    resolved = vpc.resolve_subnets([SubnetSelectorTerm(id="subnet-0ff")])
    assert [(s.id, s.zone) for s in resolved] == [
        ("subnet-00000001", "us-east-1a"),
        ("subnet-00000002", "us-east-1b"),
    ]
    assert _groups(vpc, {"name": "anything"}) == ["sg-00000001"]


def test_changes_add_remove_and_retag() -> None:
    vpc = _vpc()
    vpc.add_subnet(SimulatedSubnet("subnet-0d", "us-east-1a", {"tier": "private"}))
    vpc.remove("subnet-0a")
    vpc.retag("sg-01", {"role": "nodes"})
    assert _subnets(vpc, {"tags": {"tier": "private"}}) == ["subnet-0b", "subnet-0d"]
    assert _groups(vpc, {"tags": {"role": "nodes"}}) == ["sg-01", "sg-02"]
    with pytest.raises(NetworkError):
        vpc.add_security_group(SimulatedSecurityGroup("sg-01", "again"))
    with pytest.raises(NetworkError):
        vpc.remove("subnet-0a")
    with pytest.raises(NetworkError):
        vpc.retag("sg-0ff", {})
