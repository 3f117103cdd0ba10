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

A step's cost does not grow with the instances that are settled: it asks EC2 only about the
instances of NodeClaims without a Node, and about Nodes' instances that are shutting down or
terminated (two filtered DescribeInstances calls); Nodes and NodeClaims are read as plain JSON.
Only every :data:`SWEEP_STEPS` steps does it describe every instance, to find Nodes whose
instance is gone altogether. Describing and reading every object each second made this stand-in,
in the process that also serves moto, the slowest part of a 1,000-node cluster: moto's
answers to the node manager's launches waited behind it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from kubernetes import client

from tests.support.controlplane import FAULTY_KUBELET

GROUP, VERSION = "karpenter.sh", "v1"
SWEEP_STEPS = 10
"""Every this many steps, every instance is described (a Node whose instance is gone)."""
GONE = ("shutting-down", "terminated")
FILTER_VALUES = 200
"""Instance ids in one DescribeInstances filter."""


class InstanceNodes:
    """See the module docstring."""

    def __init__(self, api: client.ApiClient, ec2: Any) -> None:
        self.core: Any = client.CoreV1Api(api)
        self.custom: Any = client.CustomObjectsApi(api)
        self.ec2 = ec2
        self.registered: list[str] = []
        self.steps = 0
        self.error: Exception | None = None
        self.faulty: set[str] = set()
        """Image ids whose instances' Nodes never become Ready (module docstring)."""

    def step(self) -> None:
        """Register and clean up once (module docstring)."""
        sweep = self.steps % SWEEP_STEPS == 0
        self.steps += 1
        nodes = self._items(self.core.list_node(_preload_content=False))
        claims = self._items(
            self.custom.list_cluster_custom_object(
                GROUP, VERSION, "nodeclaims", _preload_content=False
            )
        )
        by_provider = {
            str(n["spec"]["providerID"]): n for n in nodes if n.get("spec", {}).get("providerID")
        }
        waiting = {
            str(provider).rsplit("/", 1)[-1]: claim
            for claim in claims
            if (provider := (claim.get("status") or {}).get("providerID"))
            and provider not in by_provider
        }
        states = self._instances(waiting)
        for instance_id, claim in waiting.items():
            state, dns, image = states.get(instance_id, ("missing", "", ""))
            if state == "running":
                provider = claim["status"]["providerID"]
                self._register(claim, provider, dns, faulty=image in self.faulty)
        ids = {provider.rsplit("/", 1)[-1]: name for provider, name in self._node_names(nodes)}
        if sweep:
            known = self._instances(None)
            doomed = {i for i in ids if known.get(i, ("missing", "", ""))[0] in {*GONE, "missing"}}
        else:
            doomed = set(self._instances(ids, states=GONE))
        for instance_id in sorted(doomed):
            self._delete_node(ids[instance_id])

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

    @staticmethod
    def _items(response: Any) -> list[dict[str, Any]]:
        """A list response's items, read as JSON (the client's models are slow to build)."""
        items: list[dict[str, Any]] = json.loads(response.data)["items"]
        return items

    @staticmethod
    def _node_names(nodes: list[dict[str, Any]]) -> Iterator[tuple[str, str]]:
        for node in nodes:
            provider = (node.get("spec") or {}).get("providerID")
            if provider:
                yield str(provider), str(node["metadata"]["name"])

    def _instances(
        self, ids: Iterable[str] | None, states: tuple[str, ...] = ()
    ) -> dict[str, tuple[str, str, str]]:
        """The state, private DNS name and image of the instances of ``ids`` (None: of every
        instance), of those in ``states`` only when given."""
        filters = [{"Name": "instance-state-name", "Values": list(states)}] if states else []
        if ids is None:
            return self._describe(filters)
        wanted = sorted(ids)
        found: dict[str, tuple[str, str, str]] = {}
        for at in range(0, len(wanted), FILTER_VALUES):
            chunk = wanted[at : at + FILTER_VALUES]
            found.update(self._describe([*filters, {"Name": "instance-id", "Values": chunk}]))
        return found

    def _describe(self, filters: list[dict[str, Any]]) -> dict[str, tuple[str, str, str]]:
        found: dict[str, tuple[str, str, str]] = {}
        pages = self.ec2.get_paginator("describe_instances").paginate(Filters=filters)
        for page in pages:
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
