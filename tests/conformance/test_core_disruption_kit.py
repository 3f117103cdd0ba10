"""What the core-disruption conformance tests share: manifests and a simulated cluster to drive.

A :class:`Sim` is driftwave's simulated world (the agent's real controllers on the simulated
cluster and cloud) built from a Scenario document: the tests let its controllers provision the
nodes, then change the cluster as Karpenter's tests set their stage (annotate a node, mark a pod
as terminating, add a mirror pod...) and either run on (and read the timeline) or ask the
disruption controller directly which nodes are candidates.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from pathlib import Path
from typing import Any

import yaml

from agent.api.kube import Node, Pod
from agent.api.nodeclaim import NodeClaim
from agent.disruption.candidates import DisruptionClass, candidates
from agent.disruption.commands import DisruptionMethod
from agent.sim.report import report
from agent.sim.scenario_run import build_world, load_scenario, run
from agent.sim.world import World

SUITE = "core-disruption"
NODECLASS: dict[str, Any] = {
    "apiVersion": "karpenter.k8s.aws/v1",
    "kind": "EC2NodeClass",
    "metadata": {"name": "default"},
    "spec": {
        "amiSelectorTerms": [{"tags": {"env": "prod"}}],
        "amiFamily": "AL2023",
        "role": "node-role",
        "subnetSelectorTerms": [{"tags": {"k": "v"}}],
        "securityGroupSelectorTerms": [{"tags": {"k": "v"}}],
    },
}
PINNED: dict[str, Any] = {
    **NODECLASS,
    "metadata": {"name": "pinned"},
    "spec": {**NODECLASS["spec"], "amiSelectorTerms": [{"id": "ami-0aa0"}]},
}
"""An EC2NodeClass pinned to the first image: its nodes never drift when an image is published."""
OLD_AMI = {"id": "ami-0aa0", "name": "golden-1", "family": "AL2023",
           "created": "2025-12-01T00:00:00Z", "tags": {"env": "prod"}}  # fmt: skip
NEW_AMI = {"id": "ami-0bb0", "name": "golden-2", "family": "AL2023",
           "created": "2025-12-20T00:00:00Z", "tags": {"env": "prod"}}  # fmt: skip
DND = "karpenter.sh/do-not-disrupt"
UP = 120.0
"""Seconds after which the first nodes are up (launched at 1 s, initialized by about 45 s)."""


def pool(
    name: str = "default",
    disruption: dict[str, Any] | None = None,
    *,
    types: Iterable[str] = ("m6i.xlarge",),
    capacity: Iterable[str] = ("on-demand",),
    labels: dict[str, str] | None = None,
    nodeclass: str = "default",
    weight: int | None = None,
    **template: Any,
) -> dict[str, Any]:
    """A NodePool of ``types`` and ``capacity`` (``disruption`` defaults to no consolidation and
    every node allowed) on EC2NodeClass ``nodeclass`` (``pinned``: nodes that never drift);
    ``template`` adds NodeClaim template spec fields; ``weight`` orders the NodePools."""
    spec: dict[str, Any] = {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": nodeclass},
        "requirements": [
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": list(capacity)},
            {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": list(types)},
        ],
        **template,
    }
    meta: dict[str, Any] = {"labels": {"pool": name, **(labels or {})}}
    out: dict[str, Any] = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {
            "template": {"metadata": meta, "spec": spec},
            "disruption": disruption
            if disruption is not None
            else {"consolidateAfter": "Never", "budgets": [{"nodes": "100%"}]},
        },
    }
    if weight is not None:
        out["spec"]["weight"] = weight
    return out


def deployment(
    name: str,
    replicas: int,
    cpu: str,
    *,
    annotations: dict[str, str] | None = None,
    on: str | None = None,
    spread: bool = False,
    **pod: Any,
) -> dict[str, Any]:
    """A Deployment of ``replicas`` pods labelled ``app: name`` requesting ``cpu``; ``on`` pins
    them to a NodePool, ``spread`` puts each on its own node."""
    spec: dict[str, Any] = {
        "containers": [{"name": name, "image": name, "resources": {"requests": {"cpu": cpu}}}],
        **pod,
    }
    if on is not None:
        spec["nodeSelector"] = {"pool": on}
    if spread:
        spec["affinity"] = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"topologyKey": "kubernetes.io/hostname",
                     "labelSelector": {"matchLabels": {"app": name}}}
                ]
            }
        }  # fmt: skip
    meta: dict[str, Any] = {"labels": {"app": name}}
    if annotations:
        meta["annotations"] = annotations
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": meta, "spec": spec}},
    }  # fmt: skip


def pdb(app: str, **spec: Any) -> dict[str, Any]:
    """A PodDisruptionBudget over the pods labelled ``app`` (``spec``: minAvailable, ...)."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": f"{app}-pdb-{len(spec)}{''.join(sorted(spec))}".lower()[:60]},
        "spec": {"selector": {"matchLabels": {"app": app}}, **spec},
    }


def drift_at(at: str) -> dict[str, Any]:
    """The event that drifts every node: a newer image the EC2NodeClass selects."""
    return {"at": at, "publishAmi": NEW_AMI}


def scale(name: str, replicas: int, at: str) -> dict[str, Any]:
    """The event that scales Deployment ``name``."""
    ref = {"kind": "Deployment", "name": name, "namespace": "default", "replicas": replicas}
    return {"at": at, "scale": ref}


class Sim:
    """See the module docstring."""

    def __init__(
        self,
        tmp_path: Path,
        manifests: list[dict[str, Any]],
        events: Iterable[dict[str, Any]] = (),
        *,
        zones: Iterable[str] = ("us-east-1a",),
        until: str = "6h",
    ) -> None:
        document = {
            "apiVersion": "driftwave.io/v1alpha1",
            "kind": "Scenario",
            "metadata": {"name": "conformance"},
            "spec": {
                "cluster": {"name": "c", "kubernetesVersion": "1.31", "zones": list(zones)},
                "amis": [OLD_AMI],
                "manifests": [NODECLASS, PINNED, *manifests],
                "events": list(events),
                "until": until,
            },
        }
        path = tmp_path / "scenario.yaml"
        path.write_text(yaml.safe_dump(document))
        scenario, objects = load_scenario(path)
        self.world: World = build_world(scenario, objects)
        run(self.world, scenario, until=0.0)  # schedules the events; runs nothing yet

    # ------------------------------------------------------------------ time

    def run(self, seconds: float) -> Sim:
        """Run the world until ``seconds`` after the start."""
        self.world.run_until(self.world.start + timedelta(seconds=seconds))
        return self

    @property
    def t(self) -> float:
        """Seconds since the start."""
        return (self.world.clock.now() - self.world.start).total_seconds()

    # ------------------------------------------------------------------ reading

    def nodes(self) -> list[Node]:
        """The nodes, by name."""
        return sorted(self.world.cluster.list(Node), key=lambda n: n.metadata.name or "")

    def claims(self) -> list[NodeClaim]:
        """The NodeClaims, by name."""
        return sorted(self.world.cluster.list(NodeClaim), key=lambda c: c.name)

    def pods(self, app: str | None = None) -> list[Pod]:
        """The pods (of Deployment ``app``), by name."""
        found = self.world.cluster.list(Pod)
        if app is not None:
            found = [p for p in found if p.metadata.labels.get("app") == app]
        return sorted(found, key=lambda p: p.metadata.name or "")

    def node_of(self, app: str) -> str:
        """The node the (first) pod of ``app`` runs on."""
        return next(p.spec.node_name for p in self.pods(app) if p.spec.node_name)

    def events(self, kind: str) -> list[dict[str, Any]]:
        """The timeline's events of type ``kind``, as dicts."""
        return [
            {"t": e.t, "type": e.type, "object": e.object, "reason": e.reason, **e.details}
            for e in self.world.timeline
            if e.type == kind
        ]

    def commands(self, method: str | None = None) -> list[dict[str, Any]]:
        """The disruption commands started (of ``method``)."""
        return [e for e in self.events("DisruptionStarted") if method in (None, e["method"])]

    def disrupted(self) -> set[str]:
        """The nodes any command has taken."""
        return {n for c in self.commands() for n in c["candidates"]}

    def summary(self) -> dict[str, Any]:
        """The simulation report's summary."""
        summary: dict[str, Any] = report(self.world)["summary"]
        return summary

    # ------------------------------------------------------------------ the disruption controller

    def method(self, name: str) -> DisruptionMethod:
        """The disruption controller's method ``name`` (drift, emptiness, ...)."""
        return next(m for m in self.world.disruption.methods if m.name == name)

    def candidates(self, disruption_class: DisruptionClass) -> tuple[set[str], dict[str, str]]:
        """The disruption candidates of ``disruption_class`` now, and the held nodes' reasons."""
        controller = self.world.disruption
        context = controller.context()
        found, held = candidates(context.snapshot, context.busy, disruption_class)
        return {c.name for c in found}, held

    def candidates_for(self, name: str) -> set[str]:
        """The nodes method ``name`` would consider now (its filters applied)."""
        controller = self.world.disruption
        context = controller.context()
        return {c.name for c in controller.candidates_for(self.method(name), context)}

    # ------------------------------------------------------------------ changing the cluster

    def annotate_node(self, name: str, annotations: dict[str, str]) -> None:
        """Add ``annotations`` to node ``name``."""
        node = self.world.cluster.get(Node, name)
        meta = node.metadata.model_copy(
            update={"annotations": {**node.metadata.annotations, **annotations}}
        )
        self.world.cluster.update(node.model_copy(update={"metadata": meta}))

    def claim_of(self, node: str) -> NodeClaim:
        """The NodeClaim of node ``node``."""
        return next(c for c in self.claims() if c.status.node_name == node)

    def annotate_claim(self, node: str, annotations: dict[str, str]) -> None:
        """Add ``annotations`` to the NodeClaim of node ``node``."""
        claim = self.claim_of(node)
        meta = claim.metadata.model_copy(
            update={"annotations": {**claim.metadata.annotations, **annotations}}
        )
        self.world.cluster.update(claim.model_copy(update={"metadata": meta}))

    def add_pod(self, manifest: dict[str, Any], node: str, phase: str = "Running") -> Pod:
        """Create a pod bound to ``node`` (a mirror pod, a daemon pod... as the test needs)."""
        data = {"apiVersion": "v1", "kind": "Pod", **manifest}
        data.setdefault("spec", {}).setdefault(
            "containers", [{"name": "c", "image": "c", "resources": {"requests": {"cpu": "10m"}}}]
        )
        data["spec"]["nodeName"] = node
        data["status"] = {"phase": phase, "startTime": self.world.clock.now().isoformat()}
        pod = Pod.model_validate(data)
        created: Pod = self.world.cluster.create(pod)
        return created

    def drifted_since(self, node: str, when: str) -> None:
        """Date the ``Drifted`` condition of node ``node``'s NodeClaim to ``when`` (RFC 3339)."""
        claim = self.claim_of(node)
        conditions = [
            c.model_copy(update={"last_transition_time": when}) if c.type == "Drifted" else c
            for c in claim.status.conditions
        ]
        status = claim.status.model_copy(update={"conditions": conditions})
        self.world.cluster.update(claim.model_copy(update={"status": status}))

    def settle(self) -> None:
        """Let the controllers react to a change made by the test."""
        self.world.settle()


def ran(
    tmp_path: Path,
    manifests: list[dict[str, Any]],
    events: Iterable[dict[str, Any]],
    until: float,
    **options: Any,
) -> Sim:
    """A :class:`Sim` run to ``until`` seconds."""
    return Sim(tmp_path, manifests, events, **options).run(until)


__all__ = ["DND", "SUITE", "UP", "Sim", "deployment", "drift_at", "pdb", "pool", "ran", "scale"]
