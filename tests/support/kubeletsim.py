"""Kubelets and kube-scheduler for a cluster on the loopback API test server.

The live agent launches instances (in moto) and creates NodeClaims; in a real cluster the
instances' kubelets then register Nodes, kube-scheduler binds the pending pods, and the cloud
node controller deletes the Nodes of terminated instances. :class:`ClusterStandIn` does those
three things, through the official Kubernetes client against the test server and boto3 against
moto, each time :meth:`ClusterStandIn.step` is called:

* for every NodeClaim with a ``status.providerID`` whose instance is running and has no Node
  yet, register a Node (named as EKS names nodes, from the instance's private DNS name) with
  the providerID, the instance type's labels, the ``karpenter.sh/unregistered:NoExecute``
  taint the launch template's kubelet configuration asks for, and the claim's capacity and
  allocatable; it turns Ready on the next step;
* bind each pending pod to the first Ready, schedulable node that fits its requests, its node
  selector and its taints (a first-fit stand-in for kube-scheduler, enough for these tests);
* delete the Node of an instance that is shutting down or terminated.
"""

from __future__ import annotations

from typing import Any

from kubernetes import client

from agent.api.quantity import parse_quantity

GROUP, VERSION = "karpenter.sh", "v1"


def _quantity(value: Any) -> float:
    return float(parse_quantity(str(value)))


class ClusterStandIn:
    """See the module docstring."""

    def __init__(self, api: client.ApiClient, ec2: Any) -> None:
        self.core: Any = client.CoreV1Api(api)
        self.custom: Any = client.CustomObjectsApi(api)
        self.ec2 = ec2
        self.registered: list[str] = []
        self.bound = 0

    def step(self) -> None:
        """Register, ready, bind and clean up once (module docstring)."""
        nodes = self.core.list_node().items
        self._ready(nodes)
        states = self._instances()
        by_provider = {n.spec.provider_id: n for n in nodes if n.spec and n.spec.provider_id}
        claims = self.custom.list_cluster_custom_object(GROUP, VERSION, "nodeclaims")["items"]
        for claim in claims:
            provider = (claim.get("status") or {}).get("providerID")
            if not provider or provider in by_provider:
                continue
            instance_id = provider.rsplit("/", 1)[-1]
            state, dns = states.get(instance_id, ("missing", ""))
            if state == "running":
                self._register(claim, provider, dns)
        for node in nodes:
            provider = node.spec.provider_id if node.spec else None
            if not provider:
                continue
            state, _ = states.get(provider.rsplit("/", 1)[-1], ("missing", ""))
            if state in {"shutting-down", "terminated", "missing"}:
                self._delete_node(node.metadata.name)
        self._bind()

    def _instances(self) -> dict[str, tuple[str, str]]:
        found: dict[str, tuple[str, str]] = {}
        for page in self.ec2.get_paginator("describe_instances").paginate():
            for reservation in page["Reservations"]:
                for instance in reservation["Instances"]:
                    found[instance["InstanceId"]] = (
                        instance["State"]["Name"],
                        instance.get("PrivateDnsName") or instance["InstanceId"],
                    )
        return found

    def _register(self, claim: dict[str, Any], provider: str, dns: str) -> None:
        labels = dict(claim["metadata"].get("labels") or {})
        status = claim.get("status") or {}
        kept = {
            k: v
            for k, v in labels.items()
            if k.startswith(("node.kubernetes.io/", "topology.kubernetes.io/", "kubernetes.io/"))
        }
        name = dns.split(".")[0] + ".ec2.internal" if dns else provider.rsplit("/", 1)[-1]
        body = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": kept},
            "spec": {
                "providerID": provider,
                "taints": [{"key": "karpenter.sh/unregistered", "effect": "NoExecute"}],
            },
            "status": {
                "capacity": {k: str(v) for k, v in (status.get("capacity") or {}).items()},
                "allocatable": {k: str(v) for k, v in (status.get("allocatable") or {}).items()},
                "conditions": [{"type": "Ready", "status": "False", "reason": "KubeletNotReady"}],
            },
        }
        self.core.create_node(body)
        self.registered.append(name)

    def _ready(self, nodes: list[Any]) -> None:
        for node in nodes:
            conditions = node.status.conditions or [] if node.status else []
            if any(c.type == "Ready" and c.status == "True" for c in conditions):
                continue
            patch = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
            self.core.patch_node_status(
                node.metadata.name, patch, _content_type="application/merge-patch+json"
            )

    def _delete_node(self, name: str) -> None:
        try:
            self.core.delete_node(name)
        except client.ApiException as exc:
            if exc.status != 404:
                raise

    def _bind(self) -> None:
        nodes = [n for n in self.core.list_node().items if _schedulable(n)]
        pods = self.core.list_pod_for_all_namespaces().items
        used: dict[str, list[float]] = {n.metadata.name: [0.0, 0.0, 0.0] for n in nodes}
        for pod in pods:
            if pod.spec.node_name in used:
                cpu, memory = _requests(pod)
                used[pod.spec.node_name][0] += cpu
                used[pod.spec.node_name][1] += memory
                used[pod.spec.node_name][2] += 1
        for pod in pods:
            if pod.spec.node_name or pod.metadata.deletion_timestamp:
                continue
            cpu, memory = _requests(pod)
            for node in nodes:
                free = node.status.allocatable or {}
                taken = used[node.metadata.name]
                fits = (
                    taken[0] + cpu <= _quantity(free.get("cpu", 0))
                    and taken[1] + memory <= _quantity(free.get("memory", 0))
                    and taken[2] + 1 <= _quantity(free.get("pods", 110))
                    and _selects(pod, node)
                    and _tolerates(pod, node)
                )
                if fits:
                    self._bind_pod(pod, node.metadata.name)
                    taken[0] += cpu
                    taken[1] += memory
                    taken[2] += 1
                    break

    def _bind_pod(self, pod: Any, node: str) -> None:
        body = client.V1Binding(
            metadata=client.V1ObjectMeta(name=pod.metadata.name),
            target=client.V1ObjectReference(kind="Node", name=node, api_version="v1"),
        )
        self.core.create_namespaced_binding(pod.metadata.namespace, body, _preload_content=False)
        self.bound += 1


def _schedulable(node: Any) -> bool:
    if node.metadata.deletion_timestamp or (node.spec and node.spec.unschedulable):
        return False
    conditions = node.status.conditions or [] if node.status else []
    return any(c.type == "Ready" and c.status == "True" for c in conditions)


def _requests(pod: Any) -> tuple[float, float]:
    cpu = memory = 0.0
    for container in pod.spec.containers or []:
        requests = (container.resources.requests or {}) if container.resources else {}
        cpu += _quantity(requests.get("cpu", 0))
        memory += _quantity(requests.get("memory", 0))
    return cpu, memory


def _selects(pod: Any, node: Any) -> bool:
    labels = node.metadata.labels or {}
    return all(labels.get(k) == v for k, v in (pod.spec.node_selector or {}).items())


def _tolerates(pod: Any, node: Any) -> bool:
    tolerations = pod.spec.tolerations or []
    for taint in (node.spec.taints or []) if node.spec else []:
        if taint.effect not in {"NoSchedule", "NoExecute"}:
            continue
        if not any(
            (t.key == taint.key or (t.key is None and t.operator == "Exists"))
            and (t.effect in {None, "", taint.effect})
            for t in tolerations
        ):
            return False
    return True
