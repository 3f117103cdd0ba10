"""The simulated VPC: subnets and security groups, and how selector terms resolve against them.

A scenario that declares no network gets an *open* VPC: one subnet per zone
(``subnet-00000001``, ``subnet-00000002``, ... in zone order) and one security group
(``sg-00000001``), and every selector term matches all of them, so any EC2NodeClass resolves to
the whole VPC whatever its terms say. A declared network is *strict*: terms resolve as Karpenter
documents them for ``subnetSelectorTerms`` and ``securityGroupSelectorTerms`` (terms OR-ed, the
fields of a term AND-ed; ``id`` names one resource, ``tags`` must all be carried, a value ``*``
only needs the key; a security group's ``name`` is its group name), and the network can change
while the scenario runs (:meth:`SimulatedNetwork.add_subnet`, :meth:`~SimulatedNetwork.remove`,
:meth:`~SimulatedNetwork.retag`, ...).

Resolution is instantaneous and ordered by id (the AWS adapter orders subnets by free addresses,
which the simulation does not model).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from agent.api.nodeclass_status import ResolvedSecurityGroup, ResolvedSubnet
from common.selectors import SecurityGroupSelectorTerm, SubnetSelectorTerm


class NetworkError(ValueError):
    """A change names a resource that does not exist, or adds one that does."""


@dataclass(frozen=True, slots=True)
class SimulatedSubnet:
    """One subnet: its id, zone and tags."""

    id: str
    zone: str
    tags: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SimulatedSecurityGroup:
    """One security group: its id, group name and tags."""

    id: str
    name: str
    tags: Mapping[str, str] = field(default_factory=dict)


def _tags_match(wanted: Mapping[str, str] | None, carried: Mapping[str, str]) -> bool:
    return all(
        key in carried and (value == "*" or carried[key] == value)
        for key, value in (wanted or {}).items()
    )


def subnet_selected(term: SubnetSelectorTerm, subnet: SimulatedSubnet) -> bool:
    """Whether ``term`` selects ``subnet`` (every field it sets matches)."""
    return (term.id is None or term.id == subnet.id) and _tags_match(term.tags, subnet.tags)


def group_selected(term: SecurityGroupSelectorTerm, group: SimulatedSecurityGroup) -> bool:
    """Whether ``term`` selects ``group`` (every field it sets matches)."""
    return (
        (term.id is None or term.id == group.id)
        and (term.name is None or term.name == group.name)
        and _tags_match(term.tags, group.tags)
    )


class SimulatedNetwork:
    """See the module docstring. ``strict=False`` makes the open VPC."""

    def __init__(
        self,
        subnets: Iterable[SimulatedSubnet],
        security_groups: Iterable[SimulatedSecurityGroup],
        *,
        strict: bool = True,
    ) -> None:
        self.strict = strict
        self._subnets: dict[str, SimulatedSubnet] = {}
        self._groups: dict[str, SimulatedSecurityGroup] = {}
        for subnet in subnets:
            self.add_subnet(subnet)
        for group in security_groups:
            self.add_security_group(group)

    @classmethod
    def open(cls, zones: Sequence[str]) -> SimulatedNetwork:
        """The open VPC of a scenario that declares no network (module docstring)."""
        subnets = [
            SimulatedSubnet(id=f"subnet-{i:08x}", zone=zone) for i, zone in enumerate(zones, 1)
        ]
        return cls(subnets, [SimulatedSecurityGroup("sg-00000001", "default")], strict=False)

    @property
    def subnets(self) -> list[SimulatedSubnet]:
        """Every subnet, by id."""
        return [self._subnets[k] for k in sorted(self._subnets)]

    @property
    def security_groups(self) -> list[SimulatedSecurityGroup]:
        """Every security group, by id."""
        return [self._groups[k] for k in sorted(self._groups)]

    def resolve_subnets(self, terms: Sequence[SubnetSelectorTerm]) -> list[ResolvedSubnet]:
        """``status.subnets`` for these terms: the subnets any of them selects, by id."""
        return [
            ResolvedSubnet(id=s.id, zone=s.zone)
            for s in self.subnets
            if not self.strict or any(subnet_selected(t, s) for t in terms)
        ]

    def resolve_security_groups(
        self, terms: Sequence[SecurityGroupSelectorTerm]
    ) -> list[ResolvedSecurityGroup]:
        """``status.securityGroups`` for these terms: the groups any of them selects, by id."""
        return [
            ResolvedSecurityGroup(id=g.id, name=g.name)
            for g in self.security_groups
            if not self.strict or any(group_selected(t, g) for t in terms)
        ]

    def add_subnet(self, subnet: SimulatedSubnet) -> None:
        """Create a subnet; NetworkError if its id exists."""
        if subnet.id in self._subnets:
            raise NetworkError(f"subnet {subnet.id} already exists")
        self._subnets[subnet.id] = subnet

    def add_security_group(self, group: SimulatedSecurityGroup) -> None:
        """Create a security group; NetworkError if its id exists."""
        if group.id in self._groups:
            raise NetworkError(f"security group {group.id} already exists")
        self._groups[group.id] = group

    def remove(self, resource_id: str) -> None:
        """Delete a subnet or security group by id; NetworkError if there is none."""
        if self._subnets.pop(resource_id, None) is None and (
            self._groups.pop(resource_id, None) is None
        ):
            raise NetworkError(f"no subnet or security group {resource_id}")

    def retag(self, resource_id: str, tags: Mapping[str, str]) -> None:
        """Replace the tags of a subnet or security group; NetworkError if there is none."""
        if (subnet := self._subnets.get(resource_id)) is not None:
            self._subnets[resource_id] = SimulatedSubnet(subnet.id, subnet.zone, dict(tags))
        elif (group := self._groups.get(resource_id)) is not None:
            self._groups[resource_id] = SimulatedSecurityGroup(group.id, group.name, dict(tags))
        else:
            raise NetworkError(f"no subnet or security group {resource_id}")

    def has(self, resource_id: str) -> bool:
        """Whether a subnet or security group has this id."""
        return resource_id in self._subnets or resource_id in self._groups
