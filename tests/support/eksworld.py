"""One EKS-like cluster for the tests that run a node manager as a process (Karpenter's
controller, the agent, or one after the other): moto's server behind the gap-filling proxy
(:mod:`tests.support.ec2gaps`) seeded as an EKS account (:mod:`tests.support.awsseed`: the cluster,
its tagged network, two AL2023 releases, the node role), a control plane of its own with
Karpenter's CRDs, and the instances' Nodes registered on a thread as kubelets would
(:mod:`tests.support.instancenodes`).

The node manager is the test's to start: :class:`tests.support.karpenter.Karpenter` with
:attr:`EKSWorld.aws_url`, or ``driftwave agent serve`` with :meth:`EKSWorld.agent_env`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
from kubernetes import client, config

from agent.kube.real.rest import KubeREST
from tests.support.awsproxy import AWSProxy
from tests.support.awsseed import OLD_RELEASE, seed_eks_account
from tests.support.controlplane import ControlPlane, control_plane, missing_tools
from tests.support.ec2gaps import faithful_aws
from tests.support.instancenodes import InstanceNodes
from tests.support.karpenter import install_crds, missing
from tests.support.motoserver import moto_server

REGION = "us-east-1"
CLUSTER = "prod-1"
NODE_ROLE = f"KarpenterNodeRole-{CLUSTER}"
DISCOVERY = {"tags": {"karpenter.sh/discovery": CLUSTER}}
AWS_TEST_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
"""moto accepts any; boto3 in the test process needs some (set them in the environment)."""


@dataclass
class EKSWorld:
    """The parts of one cluster (module docstring)."""

    folder: Path
    plane: ControlPlane
    rest: KubeREST
    proxy: AWSProxy
    ec2: Any
    images: dict[str, str]
    """Release (``v20251202``, ``v20251216``) → AMI id."""
    nodes: InstanceNodes

    @property
    def aws_url(self) -> str:
        """What ``AWS_ENDPOINT_URL`` names for a node manager: the proxy in front of moto."""
        return self.proxy.url

    def agent_env(self) -> dict[str, str]:
        """The environment ``driftwave agent serve`` needs to reach this cluster's AWS."""
        return {
            "AWS_ENDPOINT_URL": self.aws_url,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_REGION": REGION,
        }

    def running_images(self) -> list[str]:
        """The image of every pending or running instance, sorted."""
        found = []
        for page in self.ec2.get_paginator("describe_instances").paginate():
            for reservation in page["Reservations"]:
                for instance in reservation["Instances"]:
                    if instance["State"]["Name"] in ("pending", "running"):
                        found.append(instance["ImageId"])
        return sorted(found)


def nodeclass(release: str = OLD_RELEASE, name: str = "default") -> dict[str, Any]:
    """An EC2NodeClass as Karpenter's getting-started guide writes it, on an AL2023 release."""
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": name},
        "spec": {
            "role": NODE_ROLE,
            "amiSelectorTerms": [{"alias": f"al2023@{release}"}],
            "subnetSelectorTerms": [DISCOVERY],
            "securityGroupSelectorTerms": [DISCOVERY],
        },
    }


def nodepool(
    name: str = "general",
    *,
    budget: str = "10%",
    consolidate_after: str = "Never",
    requirements: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A NodePool of on-demand c/m/r instances on the ``default`` node class."""
    wanted = requirements or [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"]},
    ]
    disruption: dict[str, Any] = {
        "consolidateAfter": consolidate_after,
        "budgets": [{"nodes": budget}],
    }
    if consolidate_after != "Never":
        disruption["consolidationPolicy"] = "WhenEmptyOrUnderutilized"
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": "default",
                    },
                    "expireAfter": "Never",
                    "requirements": wanted,
                }
            },
            "disruption": disruption,
        },
    }


def deployment(
    name: str, replicas: int, cpu: str, memory: str, namespace: str = "default"
) -> dict[str, Any]:
    """A Deployment of ``replicas`` pods, each requesting ``cpu`` and ``memory``."""
    labels = {"app": name}
    container = {
        "name": name,
        "image": f"{name}:1",
        "resources": {"requests": {"cpu": cpu, "memory": memory}},
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
        },
    }


def unbuilt() -> list[str]:
    """The tools this world needs that ``make tools`` has not built."""
    return [*missing_tools(), *missing()]


@contextmanager
def eks_world(folder: Path) -> Iterator[EKSWorld]:
    """Start the world of the module docstring in ``folder``; stop all of it afterwards."""
    with (
        moto_server() as moto_url,
        faithful_aws(moto_url, REGION) as proxy,
        control_plane(folder / "controlplane") as plane,
    ):
        images = seed_eks_account(moto_url, REGION, CLUSTER)
        boto3.client(
            "iam",
            region_name=REGION,
            endpoint_url=moto_url,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        ).create_role(RoleName=NODE_ROLE, AssumeRolePolicyDocument="{}")
        install_crds(plane)
        configuration = client.Configuration()
        config.load_kube_config(  # type: ignore[no-untyped-call]
            str(plane.kubeconfig), client_configuration=configuration
        )
        ec2 = boto3.client(
            "ec2",
            region_name=REGION,
            endpoint_url=moto_url,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        rest = plane.rest()
        nodes = InstanceNodes(client.ApiClient(configuration), ec2)
        try:
            with nodes.running():
                yield EKSWorld(folder, plane, rest, proxy, ec2, images, nodes)
        finally:
            rest.close()
