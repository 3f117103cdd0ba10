"""What EC2 does for a real cluster that no part of the test control plane can: Nodes for
instances.

The live agent launches instances (in moto) and creates NodeClaims. In EKS each instance's
kubelet then registers its Node, and the cloud node controller deletes the Node of an instance
that is gone. The test control plane has kube-scheduler (it binds the pods), the
controller-manager and kwok (it makes every Node Ready, heartbeats it, runs the pods bound to
it and finishes deleted ones), but no instances, so :class:`InstanceNodes` plays the two
instance-side parts each time :meth:`InstanceNodes.step` is called:

* for every NodeClaim with a ``status.providerID`` whose instance is running and has no Node
  yet, register a Node as the kubelet does (named from the instance's private DNS name, with
  the providerID, the instance type's labels, the ``karpenter.sh/unregistered:NoExecute``
  taint the launch template's kubelet configuration asks for, and the claim's capacity and
  allocatable); kwok turns it Ready, unless the instance runs one of :attr:`faulty` images:
  then the Node carries :data:`~tests.support.controlplane.FAULTY_KUBELET`, kwok leaves it
  alone, and it stays NotReady (a release whose kubelet never starts);
* delete the Node of an instance that is shutting down, terminated or gone.

When a controller runs on its own (Karpenter, or the agent as a process), :meth:`running` does
the same every second on a thread of its own, as kubelets join whenever their instance boots.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kubernetes import client

from tests.support.controlplane import FAULTY_KUBELET

GROUP, VERSION = "karpenter.sh", "v1"


class InstanceNodes:
    """See the module docstring."""

    def __init__(self, api: client.ApiClient, ec2: Any) -> None:
        self.core: Any = client.CoreV1Api(api)
        self.custom: Any = client.CustomObjectsApi(api)
        self.ec2 = ec2
        self.registered: list[str] = []
        self.error: Exception | None = None
        self.faulty: set[str] = set()
        """Image ids whose instances' Nodes never become Ready (module docstring)."""

    def step(self) -> None:
        """Register and clean up once (module docstring)."""
        nodes = self.core.list_node().items
        states = self._instances()
        by_provider = {n.spec.provider_id: n for n in nodes if n.spec and n.spec.provider_id}
        claims = self.custom.list_cluster_custom_object(GROUP, VERSION, "nodeclaims")["items"]
        for claim in claims:
            provider = (claim.get("status") or {}).get("providerID")
            if not provider or provider in by_provider:
                continue
            instance_id = provider.rsplit("/", 1)[-1]
            state, dns, image = states.get(instance_id, ("missing", "", ""))
            if state == "running":
                self._register(claim, provider, dns, faulty=image in self.faulty)
        for node in nodes:
            provider = node.spec.provider_id if node.spec else None
            if not provider:
                continue
            state = states.get(provider.rsplit("/", 1)[-1], ("missing", "", ""))[0]
            if state in {"shutting-down", "terminated", "missing"}:
                self._delete_node(node.metadata.name)

    @contextmanager
    def running(self, interval: float = 1.0) -> Iterator[InstanceNodes]:
        """Call :meth:`step` every ``interval`` seconds on a thread until the block ends; the
        last error a step raised (the API server busy, say) is kept in ``self.error``."""
        stop = threading.Event()

        def loop() -> None:
            while not stop.is_set():
                try:
                    self.step()
                except Exception as exc:  # kept for the test to read; retried
                    self.error = exc
                stop.wait(interval)

        thread = threading.Thread(target=loop, name="instance-nodes", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            stop.set()
            thread.join(timeout=30)

    def _instances(self) -> dict[str, tuple[str, str, str]]:
        """Every instance's state, private DNS name and image."""
        found: dict[str, tuple[str, str, str]] = {}
        for page in self.ec2.get_paginator("describe_instances").paginate():
            for reservation in page["Reservations"]:
                for instance in reservation["Instances"]:
                    found[instance["InstanceId"]] = (
                        instance["State"]["Name"],
                        instance.get("PrivateDnsName") or instance["InstanceId"],
                        instance.get("ImageId", ""),
                    )
        return found

    def _register(
        self, claim: dict[str, Any], provider: str, dns: str, *, faulty: bool = False
    ) -> None:
        labels = dict(claim["metadata"].get("labels") or {})
        status = claim.get("status") or {}
        kept = {
            k: v
            for k, v in labels.items()
            if k.startswith(("node.kubernetes.io/", "topology.kubernetes.io/", "kubernetes.io/"))
        }
        if faulty:
            kept[FAULTY_KUBELET] = "true"
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
            },
        }
        self.core.create_node(body)
        self.registered.append(name)

    def _delete_node(self, name: str) -> None:
        try:
            self.core.delete_node(name)
        except client.ApiException as exc:
            if exc.status != 404:
                raise
