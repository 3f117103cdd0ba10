"""Disruption benchmark: how close a drift comes to its disruption budget's limit, at what cost.

A run simulates (:class:`agent.sim.world.World`: the agent's real controllers, simulated cluster
and cloud, virtual clock) N on-demand m6i.2xlarge nodes running a Deployment of 10 N pods (750m
CPU: ten fit a node), a PodDisruptionBudget over them (``--pdb``, maxUnavailable 10%) and a
NodePool with ``consolidateAfter: Never`` and one budget (``--budget``, 10% of the nodes). Once
the pods run (10 simulated minutes in), a newer AMI with the EC2NodeClass's selector tag is
published, every node drifts, and the world is stepped timer by timer until it converges: every
node on the new image, no NodeClaim Drifted or being deleted, no pod pending. Reported per run:

* ``simulatedSeconds`` from the publication to convergence, and ``ratio``: it over the budget-
  bound minimum ``minimumSeconds`` = ceil(N / allowed) x ``replacementSeconds``, where allowed =
  ceil(budget x N) and a replacement's time is measured: the median, over the drift commands, of
  the simulated time from ``DisruptionStarted`` to the candidate's ``Terminated``;
* ``wallSeconds`` (``cpuSeconds``: CPU time) of the drift phase, ``provisionWallSeconds`` of
  building and provisioning;
* ``peakRssMB``: each size runs in a child process of its own, this is its ``ru_maxrss``
  (the child raises the garbage collector's thresholds, as ``driftwave agent simulate`` and
  ``plan`` do: see :mod:`agent.sim.heap`);
* ``pdbViolations``: evictions that left a PodDisruptionBudget short (:mod:`agent.sim.metrics`).

Targets: ratio <= 1.15; 5,000 nodes / 50,000 pods within 60 s wall and 500 MB. Exits 1 when a run
does not converge or breaks a PDB. Prints a table, or JSON rows with ``--json``.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from string import Template
from typing import Any

from agent.api.kube import Pod
from agent.api.nodeclaim import NodeClaim
from agent.cloud.simulated.amis import AMI
from agent.lifecycle.conditions import is_true
from agent.sim.heap import tune_for_large_simulations
from agent.sim.scenario_run import build_world, load_scenario
from agent.sim.world import World
from bench.cli import Parser, working

ROOT = Path(__file__).resolve().parent.parent
SIZES = (100, 1000, 5000)
PODS_PER_NODE = 10
TAGS = {"driftwave.io/bench": "disruption"}
OLD_AMI, NEW_AMI = "ami-0000000000000b001", "ami-0000000000000b002"
PUBLISH_AFTER = timedelta(minutes=10)
PROVISION_LIMIT = timedelta(hours=1)
COMMAND_TIMEOUT = timedelta(minutes=10)
MEASURED = "median simulated time from a drift command's DisruptionStarted to its node's Terminated"
SCENARIO = Template("""\
apiVersion: driftwave.io/v1alpha1
kind: Scenario
metadata: {name: bench-disruption-$nodes}
spec:
  cluster: {name: bench, kubernetesVersion: "1.31"}
  amis:
    - {id: $old, name: bench-1, family: AL2023, created: "2025-12-01T00:00:00Z", tags: $tags}
  manifests:
    - apiVersion: karpenter.sh/v1
      kind: NodePool
      metadata: {name: default}
      spec:
        template:
          spec:
            nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
            requirements:
              - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
              - {key: node.kubernetes.io/instance-type, operator: In, values: [m6i.2xlarge]}
        disruption: {consolidateAfter: Never, budgets: [{nodes: "$budget"}]}
    - apiVersion: karpenter.k8s.aws/v1
      kind: EC2NodeClass
      metadata: {name: default}
      spec:
        amiFamily: AL2023
        amiSelectorTerms: [{tags: $tags}]
        role: KarpenterNodeRole-bench
        subnetSelectorTerms: &discovery [{tags: {karpenter.sh/discovery: bench}}]
        securityGroupSelectorTerms: *discovery
    - apiVersion: apps/v1
      kind: Deployment
      metadata: {name: bench}
      spec:
        replicas: $pods
        selector: {matchLabels: {app: bench}}
        template:
          metadata: {labels: {app: bench}}
          spec: {containers: [{name: app, image: "app:1", resources: {requests: {cpu: 750m}}}]}
""")
PDB = """\
    - apiVersion: policy/v1
      kind: PodDisruptionBudget
      metadata: {name: bench}
      spec: {maxUnavailable: "%s", selector: {matchLabels: {app: bench}}}
"""


def build(nodes: int, budget: str, pdb: str | None) -> World:
    """The world of a run, loaded as a scenario file is (so its manifests are validated)."""
    tags, pods = json.dumps(TAGS), nodes * PODS_PER_NODE
    text = SCENARIO.substitute(nodes=nodes, pods=pods, budget=budget, old=OLD_AMI, tags=tags)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "scenario.yaml")
        path.write_text(text + (PDB % pdb if pdb is not None else ""), encoding="utf-8")
        spec, objects = load_scenario(path)
    return build_world(spec, objects)


def step(world: World) -> None:
    """Run the next due timers, then let the controllers settle (as ``scenario_run.run``)."""
    upcoming = world.clock.next_timer()
    assert upcoming is not None, "the controllers always poll: a timer is always queued"
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
        if claim.status.image_id != NEW_AMI or is_true(claim, "Drifted"):
            return False
        if claim.metadata.deletion_timestamp:
            return False
    return pending_pods(world) == 0


def replacement_times(world: World, since: float) -> list[float]:
    """Per drift candidate: seconds from its command's DisruptionStarted to its Terminated."""
    started: dict[str, float] = {}
    times: list[float] = []
    for event in world.timeline:
        if event.t < since:
            continue
        if event.type == "DisruptionStarted" and event.details.get("method") == "drift":
            started.update(dict.fromkeys(event.details.get("candidates", []), event.t))
        elif event.type == "Terminated" and event.details.get("node") in started:
            times.append(event.t - started.pop(event.details["node"]))
    return times


def measure(nodes: int, budget: str = "10%", pdb: str | None = "10%") -> dict[str, Any]:
    """One run in this process (see the module docstring): a JSON-ready row."""
    began = time.perf_counter()
    world = build(nodes, budget, pdb)
    world.settle()
    ready_by = world.start + PUBLISH_AFTER
    while world.clock.now() < world.start + PROVISION_LIMIT and (
        world.clock.now() < ready_by or pending_pods(world)
    ):
        step(world)
    provision_wall = time.perf_counter() - began
    total = len(world.cluster.list(NodeClaim))
    allowed = math.ceil(int(budget[:-1]) * total / 100) if "%" in budget else int(budget)
    began, cpu, published = time.perf_counter(), time.process_time(), world.clock.now()
    version = world.kubernetes_version
    world.amis.add(
        AMI(NEW_AMI, "bench-2", "AL2023", "v2", version, "amd64", created=published, tags=TAGS)
    )
    world.record("AMIPublished", f"ami/{NEW_AMI}", "bench-2", {"faulty": False})
    world.settle()
    deadline = published + (math.ceil(total / max(allowed, 1)) + 6) * COMMAND_TIMEOUT
    while not converged(world) and world.clock.now() < deadline:
        step(world)
    wall, cpu = time.perf_counter() - began, time.process_time() - cpu
    simulated = (world.clock.now() - published).total_seconds()
    times = replacement_times(world, (published - world.start).total_seconds())
    replacement = statistics.median(times) if times else 0.0
    minimum = math.ceil(total / max(allowed, 1)) * replacement
    return {
        "nodes": total,
        "pods": len(world.cluster.list(Pod)),
        "budget": budget,
        "pdb": pdb,
        "allowed": allowed,
        "converged": converged(world),
        "ratio": round(simulated / minimum, 4) if minimum else None,
        "simulatedSeconds": simulated,
        "minimumSeconds": minimum,
        "replacementSeconds": replacement,
        "replacementMeasuredAs": MEASURED,
        "driftReplacements": len(times),
        "wallSeconds": round(wall, 3),
        "cpuSeconds": round(cpu, 3),
        "provisionWallSeconds": round(provision_wall, 3),
        "peakRssMB": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "pdbViolations": len(world.metrics.pdb_violations),
        "pendingPods": pending_pods(world),
    }


def _sizes(text: str) -> list[int]:
    if not re.fullmatch(r"[1-9][0-9]*(,[1-9][0-9]*)*", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of node counts")
    return [int(s) for s in text.split(",")]


def _count(text: str) -> str:
    """An argparse type: a count, or a percentage from 1% to 100%."""
    if not re.fullmatch(r"(100|[1-9][0-9]?)%|[1-9][0-9]*", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a count or a percentage 1%-100%")
    return text


def _pdb(text: str) -> str:
    return text if text == "none" else _count(text)


def main(argv: Sequence[str] | None = None) -> int:
    """Run every size in a child process; 1 when a run does not converge or breaks a PDB."""
    parser = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=_sizes, default=list(SIZES), help="node counts")
    parser.add_argument("--budget", type=_count, default="10%", help="the NodePool's budget")
    parser.add_argument("--pdb", type=_pdb, default="10%", help="its maxUnavailable, or none")
    parser.add_argument("--json", action="store_true", help="one JSON row per run")
    parser.add_argument("--one", type=_sizes, help=argparse.SUPPRESS)  # a child's own run
    args = parser.parse_args(argv)
    if args.one is not None:
        tune_for_large_simulations()  # as the simulate and plan commands do
        pdb = None if args.pdb == "none" else args.pdb
        print(json.dumps(measure(args.one[0], args.budget, pdb)), flush=True)
        return 0
    failed = 0
    for number, size in enumerate(args.sizes):
        command = [sys.executable, "-m", "bench.disruption", "--one", str(size)]
        command += ["--budget", args.budget, "--pdb", args.pdb]
        with working(f"drifting {size} nodes ({number + 1} of {len(args.sizes)})"):
            child = subprocess.run(command, capture_output=True, text=True, check=False, cwd=ROOT)
        if child.returncode != 0:
            print(f"the run of {size} nodes failed:\n{child.stderr}", file=sys.stderr)
            return 1
        row = json.loads(child.stdout.splitlines()[-1])
        failed += not row["converged"] or row["pdbViolations"] > 0
        _emit(row, args.json, number == 0)
    if not args.json:
        print(f"min s = ceil(nodes / allowed) x replacement; replacement = {MEASURED}")
        print("targets: ratio <= 1.15; 5,000 nodes within 60 s wall (drift phase) and 500 MB")
    return 1 if failed else 0


HEADER = (
    "nodes   pods allowed converged  sim s  min s  ratio  wall s   cpu s  prov s RSS MB PDB viol"
)
LINE = (
    "{nodes:>5} {pods:>6} {allowed:>7} {converged!s:>9} {simulatedSeconds:>6.0f} "
    "{minimumSeconds:>6.0f} {ratio:>6.3f} {wallSeconds:>7.1f} {cpuSeconds:>7.1f} "
    "{provisionWallSeconds:>7.1f} {peakRssMB:>6.0f} {pdbViolations:>8}"
)


def _emit(row: dict[str, Any], as_json: bool, first: bool) -> None:
    if as_json:
        print(json.dumps(row), flush=True)
        return
    if first:
        print(HEADER)
    print(LINE.format(**{**row, "ratio": math.nan if row["ratio"] is None else row["ratio"]}))


if __name__ == "__main__":
    raise SystemExit(main())
