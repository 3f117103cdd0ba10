"""Disruption benchmark: how close drift comes to the disruption budget's limit, and its cost.

Each run builds a simulated cluster (:class:`agent.sim.world.World`: the agent's real
controllers on the simulated cluster and cloud, on a virtual clock) of N on-demand m6i.2xlarge
nodes holding 10 pods each (one Deployment of 10 N replicas, 750m CPU each, with a
PodDisruptionBudget of maxUnavailable 10%), and a NodePool with ``consolidateAfter: Never`` and
one budget (``nodes: 10%`` by default). Once the pods run (and at least 10 simulated minutes have
passed), a newer AMI with the EC2NodeClass's selector tag is published: every node drifts.

Measured per run, by stepping the world timer by timer:

* ``simulatedSeconds``: from the publication to the first instant at which every node runs the
  new image, no NodeClaim is Drifted or being deleted, and no pod is pending;
* ``replacementSeconds``: the median, over the drift commands, of the simulated time from the
  command's ``DisruptionStarted`` to its candidate's ``Terminated`` event;
* ``minimumSeconds``: the budget-bound minimum, ceil(N / allowed) x replacementSeconds, with
  allowed = ceil(budget x N); ``ratio`` = simulatedSeconds / minimumSeconds (target <= 1.15);
* ``wallSeconds`` (drift phase only) and ``provisionWallSeconds`` (initial provisioning);
* ``peakRssMB``: the run's peak resident set (each size runs in its own child process);
* ``pdbViolations``: evictions that left the PodDisruptionBudget short (agent.sim.metrics).

Targets: ratio <= 1.15; 5,000 nodes / 50,000 pods within 60 s wall and 500 MB.
Run: ``python -m bench.disruption [--sizes 100,1000,5000] [--budget 10%] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from agent.api.kube import Pod
from agent.api.nodeclaim import NodeClaim
from agent.cloud.simulated.amis import AMI
from agent.lifecycle.conditions import is_true
from agent.sim.scenario_run import build_world, load_scenario
from agent.sim.world import World
from bench.cli import Parser

SIZES = (100, 1000, 5000)
PODS_PER_NODE = 10
INSTANCE_TYPE = "m6i.2xlarge"  # 7910m CPU allocatable: ten 750m pods fit, eleven do not
TAGS = {"driftwave.io/bench": "disruption"}
OLD_AMI, NEW_AMI = "ami-0000000000000b001", "ami-0000000000000b002"
PUBLISH_AFTER = timedelta(minutes=10)
PROVISION_LIMIT = timedelta(hours=1)


def scenario(nodes: int, budget: str, pdb: bool = True) -> dict[str, Any]:
    """The Scenario document of a run (no events: the benchmark publishes the AMI itself)."""
    ref = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
    discovery = [{"tags": {"karpenter.sh/discovery": "bench"}}]
    labels = {"app": "bench"}
    pool_requirements = [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": [INSTANCE_TYPE]},
    ]
    container = {"name": "app", "image": "app:1", "resources": {"requests": {"cpu": "750m"}}}
    manifests: list[dict[str, Any]] = [
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": "default"},
            "spec": {
                "template": {"spec": {"nodeClassRef": ref, "requirements": pool_requirements}},
                "disruption": {"consolidateAfter": "Never", "budgets": [{"nodes": budget}]},
            },
        },
        {
            "apiVersion": "karpenter.k8s.aws/v1",
            "kind": "EC2NodeClass",
            "metadata": {"name": "default"},
            "spec": {
                "amiFamily": "AL2023",
                "amiSelectorTerms": [{"tags": TAGS}],
                "role": "KarpenterNodeRole-bench",
                "subnetSelectorTerms": discovery,
                "securityGroupSelectorTerms": discovery,
            },
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "bench"},
            "spec": {
                "replicas": nodes * PODS_PER_NODE,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
            },
        },
    ]
    disruption_budget = [
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "bench"},
            "spec": {"maxUnavailable": "10%", "selector": {"matchLabels": labels}},
        },
    ]
    ami = {"id": OLD_AMI, "name": "bench-v1", "family": "AL2023", "created": "2026-01-01T00:00:00Z"}
    return {
        "apiVersion": "driftwave.io/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": f"bench-disruption-{nodes}"},
        "spec": {
            "cluster": {"name": "bench", "kubernetesVersion": "1.31"},
            "amis": [{**ami, "tags": TAGS}],
            "manifests": manifests + (disruption_budget if pdb else []),
        },
    }


def build(nodes: int, budget: str, pdb: bool = True) -> World:
    """The world of a run, through the scenario loader (so the manifests are validated)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "scenario.yaml")
        path.write_text(json.dumps(scenario(nodes, budget, pdb)), encoding="utf-8")
        spec, objects = load_scenario(path)
    return build_world(spec, objects)


def step(world: World) -> None:
    """Run the next due timers, then let the controllers settle (as ``scenario_run.run``)."""
    upcoming = world.clock.next_timer()
    if upcoming is None:
        raise RuntimeError("the simulation has nothing left to do")
    world.clock.run_until(upcoming)
    world.settle()


def pending_pods(world: World) -> int:
    return sum(1 for pod in world.cluster.list(Pod) if not pod.spec.node_name)


def converged(world: World) -> bool:
    """Every node on the new image, no NodeClaim drifted or leaving, no pod pending."""
    images = world.metrics.images
    if not images or set(images[-1]["nodes"]) != {NEW_AMI}:
        return False
    for claim in world.cluster.list(NodeClaim):
        stale = claim.status.image_id != NEW_AMI or is_true(claim, "Drifted")
        if stale or claim.metadata.deletion_timestamp:
            return False
    return pending_pods(world) == 0


def replacement_seconds(world: World, since: float) -> list[float]:
    """Per drift command: seconds from its DisruptionStarted to its candidate's Terminated."""
    started: dict[str, float] = {}
    ended: list[float] = []
    for event in world.timeline:
        if event.t < since:
            continue
        if event.type == "DisruptionStarted" and event.details.get("method") == "drift":
            for node in event.details.get("candidates", []):
                started[node] = event.t
        elif event.type == "Terminated" and event.details.get("node") in started:
            ended.append(event.t - started.pop(event.details["node"]))
    return ended


def measure(nodes: int, budget: str = "10%", pdb: bool = True) -> dict[str, Any]:
    """One run in this process (see the module docstring); a JSON-ready row."""
    clock = time.perf_counter()
    world = build(nodes, budget, pdb)
    world.settle()
    limit = world.start + PROVISION_LIMIT
    while world.clock.now() < limit and (
        world.clock.now() < world.start + PUBLISH_AFTER or pending_pods(world)
    ):
        step(world)
    provision_wall = time.perf_counter() - clock
    pods = len(world.cluster.list(Pod))
    total = len(world.cluster.list(NodeClaim))
    allowed = math.ceil(float(budget.rstrip("%")) * total / 100) if budget.endswith("%") else 0
    allowed = allowed or int(budget)
    clock = time.perf_counter()
    published = world.clock.now()
    since = (published - world.start).total_seconds()
    world.amis.add(
        AMI(NEW_AMI, "bench-v2", "AL2023", "v2", "1.31", "amd64",
            created=published, tags=dict(TAGS), owner="self")
    )  # fmt: skip
    world.record("AMIPublished", f"ami/{NEW_AMI}", "bench-v2", {"faulty": False})
    world.settle()
    deadline = published + timedelta(hours=max(6.0, total / allowed))
    while not converged(world) and world.clock.now() < deadline:
        step(world)
    wall = time.perf_counter() - clock
    simulated = (world.clock.now() - published).total_seconds()
    replacements = replacement_seconds(world, since)
    replacement = statistics.median(replacements) if replacements else 0.0
    minimum = math.ceil(total / allowed) * replacement
    return {
        "nodes": total,
        "pods": pods,
        "budget": budget,
        "allowed": allowed,
        "converged": converged(world),
        "simulatedSeconds": simulated,
        "replacementSeconds": replacement,
        "replacementRange": [min(replacements, default=0), max(replacements, default=0)],
        "driftCommands": len(replacements),
        "minimumSeconds": minimum,
        "ratio": round(simulated / minimum, 4) if minimum else None,
        "wallSeconds": round(wall, 3),
        "provisionWallSeconds": round(provision_wall, 3),
        "peakRssMB": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "pdbViolations": len(world.metrics.pdb_violations),
        "pendingPods": pending_pods(world),
    }
