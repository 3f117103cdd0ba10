"""``AWSCloud``: the CloudProvider port over EC2 (see :mod:`agent.cloud.port`).

* ``create``: the launch candidates of the claim (:mod:`agent.cloud.launch`: instance types the
  claim allows whose allocatable fits its requests and for which the node class resolved an
  image; the capacity type reserved > spot > on-demand), each in the subnet of its zone with the
  most free addresses, one launch template per image (:mod:`.launchtemplates`), then CreateFleet
  (:mod:`.fleet`). Offerings that lacked capacity go to the unavailable-offerings cache (3 min).
  The launched claim is labelled, as Karpenter labels it, with its instance type, zone, capacity
  type, region, zone id and tenancy.
* ``delete``: TerminateInstances; NodeClaimNotFound once the instance is terminated or gone.
* ``get`` / ``list``: DescribeInstances by id, or by the cluster and NodeClaim tags; the
  NodeClaim is rebuilt from the instance's tags, type, zone and lifecycle.
* ``is_drifted``: the cloud's part of drift (:mod:`agent.cloud.drift`, the rules both adapters
  share) over what ``network_of`` / ``reservation_of`` tell: DescribeInstances by id, the subnet
  and security groups the claim's instance runs with, and its capacity reservation (None when it
  cannot be described). The descriptions come from a listing of the cluster's instances made
  every two minutes, 1,000 a page, as Karpenter's instance cache is refreshed, and a lookup that
  misses (an instance launched since) describes it with up to 199 others launched since in one
  call (:mod:`.described`), so a drift round over N instances makes about N / 1,000 calls every
  two minutes.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from typing import Any

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.labels import CAPACITY_TYPE_LABEL
from agent.api.nodeclaim import NodeClaim, NodeClaimSpec
from agent.api.nodepool import NodeClassReference, NodePool
from agent.api.status import NodeClaimStatus
from agent.catalog import labels as lbl
from agent.cloud.aws.described import Described, Descriptions, described
from agent.cloud.aws.errors import AWSNotFound, aws_call
from agent.cloud.aws.fleet import Override, create_fleet
from agent.cloud.aws.launchtemplates import (
    CLUSTER_TAG,
    NODECLASS_TAG,
    LaunchTemplates,
    TemplateRequest,
)
from agent.cloud.aws.session import AWSClients
from agent.cloud.aws.userdata import NodeSettings, Taint
from agent.cloud.drift import LaunchedInstance, provider_drift
from agent.cloud.launch import (
    choose_capacity_type,
    fleet_overrides,
    launch_candidates,
    resolved_images,
    resource_quantities,
)
from agent.cloud.port import (
    DriftReason,
    InstanceTypeOfferings,
    InsufficientCapacity,
    NodeClaimNotFound,
    NodeClassNotReady,
)
from agent.cloud.unavailable import UnavailableOfferings
from common.kubemodel import ObjectMeta

NODEPOOL_TAG = "karpenter.sh/nodepool"
NODECLAIM_TAG = "karpenter.sh/nodeclaim"
LIVE_STATES = ["pending", "running", "stopping", "stopped", "shutting-down"]
UNREGISTERED = Taint("karpenter.sh/unregistered", "", "NoExecute")
CLOUD_LABELS = {lbl.INSTANCE_TYPE, lbl.ZONE, CAPACITY_TYPE_LABEL}
REGION_LABEL = "topology.kubernetes.io/region"
ZONE_ID_LABEL = "topology.k8s.aws/zone-id"
TENANCY_LABEL = "karpenter.k8s.aws/instance-tenancy"
"""Labels of where an instance runs that Karpenter puts on its NodeClaims (and so its Nodes):
the region, the zone's id (from the node class's subnets) and the tenancy (instances launch
with the default tenancy)."""
TypesOf = Callable[[EC2NodeClass], list[InstanceTypeOfferings]]
LIST_PAGE = 1000
"""Instances in one page of a listing (DescribeInstances' largest page, as Karpenter lists)."""


class AWSCloud:
    """See the module docstring."""

    def __init__(
        self,
        clients: AWSClients,
        *,
        cluster_name: str,
        instance_types: TypesOf,
        launch_templates: LaunchTemplates,
        unavailable: UnavailableOfferings,
    ) -> None:
        self._clients = clients
        self.cluster_name = cluster_name
        self._types = instance_types
        self._templates = launch_templates
        self.unavailable = unavailable
        self._descriptions = Descriptions(self._describe_many, self._list_described)

    def name(self) -> str:
        """``"aws"``."""
        return "aws"

    def instance_types(
        self, nodepool: NodePool, nodeclass: EC2NodeClass
    ) -> builtins.list[InstanceTypeOfferings]:
        """Every type with its offerings for the node class (its subnets' zones, prices)."""
        del nodepool
        return self._types(nodeclass)

    def create(self, claim: NodeClaim, nodeclass: EC2NodeClass) -> NodeClaim:
        """Launch the claim's instance (module docstring and the port)."""
        images = resolved_images(nodeclass)
        subnets = nodeclass.status.subnets if nodeclass.status else []
        if not subnets:
            raise NodeClassNotReady(f"EC2NodeClass {nodeclass.name} has no subnets", nodeclass.name)
        candidates = launch_candidates(claim, images, self._types(nodeclass))
        if not candidates:
            raise InsufficientCapacity(
                f"NodeClaim {claim.name}: all requested instance types were unavailable "
                "during launch"
            )
        capacity_type = choose_capacity_type(candidates)
        chosen = fleet_overrides(candidates, capacity_type)
        subnet_of: dict[str, str] = {}
        zone_ids: dict[str, str] = {}
        for subnet in subnets:  # the node class lists subnets with the most free addresses first
            subnet_of.setdefault(subnet.zone, subnet.id)
            if subnet.zone_id:
                zone_ids.setdefault(subnet.zone, subnet.zone_id)
        node = self._node_settings(claim, nodeclass)
        templates: dict[str, str] = {}
        overrides = []
        by_key = {}
        for candidate in chosen:
            subnet_id = subnet_of.get(candidate.offering.zone)
            if subnet_id is None:
                continue
            image = candidate.image.id
            if image not in templates:
                request = TemplateRequest(nodeclass, image, node)
                templates[image] = self._templates.ensure(request, self._tags(claim, nodeclass))
            override = Override(
                templates[image], candidate.instance_type.name, subnet_id, candidate.offering.zone
            )
            overrides.append(override)
            by_key[(override.instance_type, override.zone)] = candidate
        launched = create_fleet(
            self._clients, overrides, capacity_type, self._tags(claim, nodeclass)
        )
        for key in launched.lacking:
            self.unavailable.mark_unavailable(*key, reason="InsufficientInstanceCapacity")
        picked = by_key.get((launched.instance_type or "", launched.zone or ""))
        if launched.instance_id is None or picked is None:
            detail = "; ".join(f"{c}: {m}" for c, m in launched.errors) or "no instance launched"
            raise InsufficientCapacity(f"NodeClaim {claim.name}: {detail}", launched.lacking)
        provider_id = f"aws:///{picked.offering.zone}/{launched.instance_id}"
        self._descriptions.launched(launched.instance_id)
        status = claim.status.model_copy(
            update={
                "provider_id": provider_id,
                "image_id": picked.image.id,
                "capacity": resource_quantities(picked.instance_type.capacity),
                "allocatable": resource_quantities(picked.instance_type.allocatable),
            }
        )
        placed = {
            REGION_LABEL: self._clients.region,
            TENANCY_LABEL: "default",
            **(
                {ZONE_ID_LABEL: zone_ids[picked.offering.zone]}
                if picked.offering.zone in zone_ids
                else {}
            ),
        }
        metadata = claim.metadata.model_copy(
            update={"labels": {**claim.metadata.labels, **picked.labels, **placed}}
        )
        return claim.model_copy(update={"metadata": metadata, "status": status})

    def forget_nodeclass(self, name: str) -> list[str]:
        """After an EC2NodeClass is deleted: delete its launch templates (their names)."""
        return self._templates.delete_for(name)

    def delete(self, claim: NodeClaim) -> None:
        """Terminate the claim's instance; NodeClaimNotFound once it is gone."""
        provider_id = claim.status.provider_id or ""
        instance = self._describe_one(provider_id)
        state = instance["State"]["Name"]
        if state == "shutting-down":
            return
        aws_call(
            f"terminating {instance['InstanceId']}",
            self._clients.ec2.terminate_instances,
            InstanceIds=[instance["InstanceId"]],
        )
        self._descriptions.forget(instance["InstanceId"])

    def get(self, provider_id: str) -> NodeClaim:
        """The NodeClaim of a live instance; NodeClaimNotFound otherwise."""
        return self._claim(self._describe_one(provider_id))

    def is_drifted(self, claim: NodeClaim, nodeclass: EC2NodeClass) -> DriftReason | None:
        """The cloud's drift reason for ``claim`` against ``nodeclass`` (see the port), over the
        instance as EC2 describes it now."""
        return provider_drift(claim, nodeclass, self._launched)

    def _launched(self, claim: NodeClaim) -> LaunchedInstance:
        subnet, groups = self.network_of(claim)
        return LaunchedInstance(subnet, groups, self.reservation_of(claim))

    def network_of(self, claim: NodeClaim) -> tuple[str | None, tuple[str, ...] | None]:
        """The subnet and security groups of the claim's instance, as EC2 describes it now;
        (None, None) when it cannot be described (then no network drift is found, as Karpenter
        finds none when its instance lookup fails). The groups are taken as they are: an
        instance described in none has none (``()``), which differs from any node class's
        groups, as Karpenter's check finds (``SecurityGroupDrift``)."""
        found = self._recently_described(claim.status.provider_id or "")
        if found is None:
            return None, None
        return found.subnet, found.groups

    def reservation_of(self, claim: NodeClaim) -> str | None:
        """The capacity reservation the claim's instance runs in, as EC2 describes it now (None:
        none, or it cannot be described)."""
        found = self._recently_described(claim.status.provider_id or "")
        return None if found is None else found.reservation

    def list(self) -> builtins.list[NodeClaim]:
        """The NodeClaims of this cluster's live instances launched for NodeClaims."""
        paginator = self._clients.ec2.get_paginator("describe_instances")
        pages = aws_call(
            "listing instances",
            lambda **kw: builtins.list(paginator.paginate(**kw)),
            Filters=self._live_instances(),
        )
        return [
            self._claim(instance)
            for page in pages
            for reservation in page.get("Reservations", [])
            for instance in reservation.get("Instances", [])
        ]

    def _recently_described(self, provider_id: str) -> Described | None:
        """What the drift checks read of the instance, listed or described at most two minutes
        ago (None: it cannot be described; :mod:`.described`)."""
        instance_id = provider_id.rsplit("/", 1)[-1]
        if not instance_id.startswith("i-"):
            return None
        return self._descriptions.get(instance_id)

    def _live_instances(self) -> builtins.list[dict[str, Any]]:
        """DescribeInstances filters: the cluster's live instances launched for NodeClaims."""
        return [
            {"Name": f"tag:{CLUSTER_TAG}", "Values": [self.cluster_name]},
            {"Name": "tag-key", "Values": [NODECLAIM_TAG]},
            {"Name": "instance-state-name", "Values": LIVE_STATES},
        ]

    def _list_described(self) -> dict[str, Described]:
        """What the drift checks read of every live instance of the cluster, page by page (only
        that is kept of each page)."""
        paginator = self._clients.ec2.get_paginator("describe_instances")

        def pages(**kw: Any) -> dict[str, Described]:
            found: dict[str, Described] = {}
            for page in paginator.paginate(**kw):
                for reservation in page.get("Reservations", []):
                    for instance in reservation.get("Instances", []):
                        found[str(instance["InstanceId"])] = described(instance)
            return found

        return aws_call(
            "listing the cluster's instances",
            pages,
            Filters=self._live_instances(),
            PaginationConfig={"PageSize": LIST_PAGE},
        )

    def _describe_many(self, instance_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        paginator = self._clients.ec2.get_paginator("describe_instances")
        pages = aws_call(
            f"describing {len(instance_ids)} instances",
            lambda **kw: builtins.list(paginator.paginate(**kw)),
            Filters=[{"Name": "instance-id", "Values": builtins.list(instance_ids)}],
        )
        return {
            str(instance["InstanceId"]): dict(instance)
            for page in pages
            for reservation in page.get("Reservations", [])
            for instance in reservation.get("Instances", [])
        }

    def _describe_one(self, provider_id: str) -> dict[str, Any]:
        instance_id = provider_id.rsplit("/", 1)[-1]
        if not instance_id.startswith("i-"):
            raise NodeClaimNotFound(f"not an EC2 provider id: {provider_id!r}", provider_id)
        try:
            answer = aws_call(
                f"describing {instance_id}",
                self._clients.ec2.describe_instances,
                InstanceIds=[instance_id],
            )
        except AWSNotFound as exc:
            raise NodeClaimNotFound(f"no instance {instance_id}", provider_id) from exc
        for reservation in answer.get("Reservations", []):
            for instance in reservation.get("Instances", []):
                if instance["State"]["Name"] != "terminated":
                    return dict(instance)
        raise NodeClaimNotFound(f"instance {instance_id} is terminated", provider_id)

    def _claim(self, instance: dict[str, Any]) -> NodeClaim:
        tags = {t["Key"]: t["Value"] for t in instance.get("Tags", [])}
        zone = instance.get("Placement", {}).get("AvailabilityZone", "")
        capacity = "spot" if instance.get("InstanceLifecycle") == "spot" else "on-demand"
        labels = {
            lbl.INSTANCE_TYPE: instance.get("InstanceType", ""),
            lbl.ZONE: zone,
            CAPACITY_TYPE_LABEL: capacity,
        }
        if NODEPOOL_TAG in tags:
            labels[NODEPOOL_TAG] = tags[NODEPOOL_TAG]
        return NodeClaim(
            metadata=ObjectMeta(
                name=tags.get(NODECLAIM_TAG, instance["InstanceId"]), labels=labels
            ),
            spec=NodeClaimSpec(
                node_class_ref=NodeClassReference(
                    group="karpenter.k8s.aws", kind="EC2NodeClass", name=tags.get(NODECLASS_TAG, "")
                ),
                requirements=[],
            ),
            status=NodeClaimStatus(
                provider_id=f"aws:///{zone}/{instance['InstanceId']}",
                image_id=instance.get("ImageId"),
            ),
        )

    def _tags(self, claim: NodeClaim, nodeclass: EC2NodeClass) -> dict[str, str]:
        return {
            **(nodeclass.spec.tags or {}),
            f"kubernetes.io/cluster/{self.cluster_name}": "owned",
            CLUSTER_TAG: self.cluster_name,
            NODEPOOL_TAG: claim.metadata.labels.get(NODEPOOL_TAG, ""),
            NODECLAIM_TAG: claim.name,
            NODECLASS_TAG: nodeclass.name,
        }

    def _node_settings(self, claim: NodeClaim, nodeclass: EC2NodeClass) -> NodeSettings:
        labels = {k: v for k, v in claim.metadata.labels.items() if k not in CLOUD_LABELS}
        taints = [UNREGISTERED]
        for taint in [*(claim.spec.taints or []), *(claim.spec.startup_taints or [])]:
            taints.append(Taint(taint.key, taint.value or "", taint.effect))
        kubelet = nodeclass.spec.kubelet
        return NodeSettings(labels, taints, kubelet.max_pods if kubelet is not None else None)
