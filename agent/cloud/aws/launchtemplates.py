"""Launch templates: one per image and node configuration, as Karpenter's AWS provider keeps them.

A template holds what every instance of a launch shares: the image, the user data for its
family (:mod:`.userdata`: cluster, labels, taints, max pods), the node class's IMDS settings,
block devices, security groups, instance profile, detailed monitoring and tags. Its name is
``driftwave/<hash>`` (Karpenter names its own ``karpenter.k8s.aws/<hash>``), the hash of all of
that, so a change to the node class or a new image gives a new template and an unchanged one
reuses the old (an existing name is reused, never overwritten). Templates carry the node
class's tag, so :meth:`LaunchTemplates.delete_for` removes them when the class goes.

Block devices default per family as Karpenter's do: AL2 / AL2023 a 20Gi gp3 root volume
(``/dev/xvda``), Bottlerocket a 4Gi OS volume and a 20Gi data volume (``/dev/xvdb``), Windows a
50Gi root (``/dev/sda1``); all encrypted.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.quantity import parse_quantity
from agent.cloud.aws.errors import AWSError, AWSRequestError, aws_call
from agent.cloud.aws.session import AWSClients
from agent.cloud.aws.userdata import ClusterInfo, NodeSettings, encoded, render
from common.selectors import ALIAS_TO_AMI_FAMILY

PREFIX = "driftwave/"
NODECLASS_TAG = "karpenter.k8s.aws/ec2nodeclass"
CLUSTER_TAG = "eks:eks-cluster-name"
GIB = 2**30


def family_of(nodeclass: EC2NodeClass) -> str:
    """The node class's AMI family (its alias's, else ``amiFamily``, else Custom)."""
    for term in nodeclass.spec.ami_selector_terms:
        if term.alias_family:
            return ALIAS_TO_AMI_FAMILY[term.alias_family]
    return nodeclass.spec.ami_family or "Custom"


def default_block_devices(family: str) -> list[dict[str, Any]]:
    """Karpenter's default volumes for a family."""

    def volume(device: str, gib: int) -> dict[str, Any]:
        ebs = {"VolumeSize": gib, "VolumeType": "gp3", "Encrypted": True}
        return {"DeviceName": device, "Ebs": {**ebs, "DeleteOnTermination": True}}

    if family == "Bottlerocket":
        return [volume("/dev/xvda", 4), volume("/dev/xvdb", 20)]
    if family.startswith("Windows"):
        return [volume("/dev/sda1", 50)]
    return [volume("/dev/xvda", 20)]


def block_devices(nodeclass: EC2NodeClass) -> list[dict[str, Any]]:
    """The node class's ``blockDeviceMappings`` as EC2 takes them (or the family's defaults)."""
    mappings = nodeclass.spec.block_device_mappings
    if not mappings:
        return default_block_devices(family_of(nodeclass))
    out = []
    for mapping in mappings:
        ebs: dict[str, Any] = {}
        spec = mapping.ebs
        if spec is not None:
            fields = {
                "DeleteOnTermination": spec.delete_on_termination,
                "Encrypted": spec.encrypted,
                "Iops": spec.iops,
                "KmsKeyId": spec.kms_key_id,
                "SnapshotId": spec.snapshot_id,
                "Throughput": spec.throughput,
                "VolumeType": spec.volume_type,
                "VolumeSize": (
                    -(-int(parse_quantity(spec.volume_size)) // GIB) if spec.volume_size else None
                ),
            }
            ebs = {k: v for k, v in fields.items() if v is not None}
        out.append({"DeviceName": mapping.device_name, "Ebs": ebs})
    return out


@dataclass(frozen=True)
class TemplateRequest:
    """What a launch template is made of."""

    nodeclass: EC2NodeClass
    image_id: str
    node: NodeSettings


class LaunchTemplates:
    """See the module docstring."""

    def __init__(self, clients: AWSClients, cluster: ClusterInfo) -> None:
        self._clients = clients
        self.cluster = cluster
        self._known: set[str] = set()
        self._lock = threading.Lock()

    def data(self, request: TemplateRequest) -> dict[str, Any]:
        """The ``LaunchTemplateData`` of a request."""
        nodeclass = request.nodeclass
        spec = nodeclass.spec
        status = nodeclass.status
        user_data = render(family_of(nodeclass), self.cluster, request.node, spec.user_data)
        imds = spec.metadata_options
        data: dict[str, Any] = {
            "ImageId": request.image_id,
            "UserData": encoded(user_data),
            "MetadataOptions": {
                "HttpEndpoint": imds.http_endpoint,
                "HttpProtocolIpv6": imds.http_protocol_ipv6,
                "HttpPutResponseHopLimit": imds.http_put_response_hop_limit,
                "HttpTokens": imds.http_tokens,
            },
            "BlockDeviceMappings": block_devices(nodeclass),
            "Monitoring": {"Enabled": bool(spec.detailed_monitoring)},
            "SecurityGroupIds": [g.id for g in (status.security_groups if status else [])],
        }
        profile = (status.instance_profile if status else None) or spec.instance_profile
        if profile:
            data["IamInstanceProfile"] = {"Name": profile}
        return data

    def name(self, request: TemplateRequest) -> str:
        """The template's name: a hash of everything in it."""
        data = self.data(request)
        digest = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()
        return PREFIX + digest[:32]

    def ensure(self, request: TemplateRequest, tags: Mapping[str, str]) -> str:
        """The name of an existing template for ``request``, created now if needed."""
        name = self.name(request)
        with self._lock:
            if name in self._known:
                return name
        template_tags = [
            {"Key": k, "Value": v}
            for k, v in {
                **tags,
                NODECLASS_TAG: request.nodeclass.name,
                CLUSTER_TAG: self.cluster.name,
            }.items()
        ]
        try:
            aws_call(
                f"creating launch template {name}",
                self._clients.ec2.create_launch_template,
                LaunchTemplateName=name,
                LaunchTemplateData=self.data(request),
                TagSpecifications=[{"ResourceType": "launch-template", "Tags": template_tags}],
            )
        except AWSRequestError as exc:
            if "AlreadyExists" not in exc.code:
                raise
        with self._lock:
            self._known.add(name)
        return name

    def delete_for(self, nodeclass: str) -> list[str]:
        """Delete the node class's templates (found by tag); their names."""
        answer = aws_call(
            "describing launch templates",
            self._clients.ec2.describe_launch_templates,
            Filters=[
                {"Name": f"tag:{NODECLASS_TAG}", "Values": [nodeclass]},
                {"Name": f"tag:{CLUSTER_TAG}", "Values": [self.cluster.name]},
            ],
        )
        deleted = []
        for template in answer.get("LaunchTemplates", []):
            name = str(template["LaunchTemplateName"])
            try:
                aws_call(
                    f"deleting launch template {name}",
                    self._clients.ec2.delete_launch_template,
                    LaunchTemplateName=name,
                )
            except AWSError:
                continue
            deleted.append(name)
            with self._lock:
                self._known.discard(name)
        return deleted
