"""Subnets and security groups of an EC2NodeClass, discovered from its selector terms.

Terms are OR-ed; within a term the fields are AND-ed, as Karpenter documents
``subnetSelectorTerms`` and ``securityGroupSelectorTerms``: ``id`` names one resource, ``tags``
match as EC2 filters (a value ``*`` only needs the key), and a security group's ``name`` matches
its group name. Subnets come back with their zone and zone id (for ``status.subnets``), in id
order; only ``available`` subnets are used, and among several in one zone, Karpenter launches
into the one with the most free addresses, so they are ordered by free addresses, most first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agent.api.nodeclass_status import ResolvedSecurityGroup, ResolvedSubnet
from agent.cloud.aws.errors import aws_call
from agent.cloud.aws.session import AWSClients
from common.selectors import SecurityGroupSelectorTerm, SubnetSelectorTerm


def tag_filters(tags: Mapping[str, str] | None) -> list[dict[str, Any]]:
    """EC2 filters for selector tags (``*``: the key exists)."""
    filters: list[dict[str, Any]] = []
    for key, value in sorted((tags or {}).items()):
        if value == "*":
            filters.append({"Name": "tag-key", "Values": [key]})
        else:
            filters.append({"Name": f"tag:{key}", "Values": [value]})
    return filters


class Network:
    """DescribeSubnets / DescribeSecurityGroups for selector terms."""

    def __init__(self, clients: AWSClients) -> None:
        self._clients = clients

    def subnets(self, terms: Sequence[SubnetSelectorTerm]) -> list[ResolvedSubnet]:
        """The available subnets any term selects (most free addresses first, then by id)."""
        found: dict[str, dict[str, Any]] = {}
        for term in terms:
            filters = tag_filters(term.tags)
            if term.id is not None:
                filters.append({"Name": "subnet-id", "Values": [term.id]})
            for subnet in self._pages("describe_subnets", "Subnets", filters):
                if subnet.get("State", "available") == "available":
                    found[subnet["SubnetId"]] = subnet
        ordered = sorted(
            found.values(),
            key=lambda s: (-int(s.get("AvailableIpAddressCount", 0)), s["SubnetId"]),
        )
        return [
            ResolvedSubnet(
                id=s["SubnetId"], zone=s["AvailabilityZone"], zone_id=s.get("AvailabilityZoneId")
            )
            for s in ordered
        ]

    def security_groups(
        self, terms: Sequence[SecurityGroupSelectorTerm]
    ) -> list[ResolvedSecurityGroup]:
        """The security groups any term selects, in id order."""
        found: dict[str, dict[str, Any]] = {}
        for term in terms:
            filters = tag_filters(term.tags)
            if term.id is not None:
                filters.append({"Name": "group-id", "Values": [term.id]})
            if term.name is not None:
                filters.append({"Name": "group-name", "Values": [term.name]})
            for group in self._pages("describe_security_groups", "SecurityGroups", filters):
                found[group["GroupId"]] = group
        return [
            ResolvedSecurityGroup(id=gid, name=found[gid].get("GroupName")) for gid in sorted(found)
        ]

    def _pages(self, operation: str, key: str, filters: list[dict[str, Any]]) -> list[Any]:
        paginator = self._clients.ec2.get_paginator(operation)
        pages = aws_call(
            f"{operation.replace('_', ' ')}",
            lambda **kw: list(paginator.paginate(**kw)),
            Filters=filters,
        )
        return [item for page in pages for item in page.get(key, [])]
