"""Disruption benchmark: how close a drift comes to its disruption budget's limit, at what cost.

A run simulates (:class:`agent.sim.world.World`: the agent's real controllers, simulated cluster
and cloud, virtual clock) N on-demand m6i.2xlarge nodes running a Deployment of 10 N pods (750m
CPU: ten fit a node), a PodDisruptionBudget over them (``--pdb``, maxUnavailable 10%) and a
NodePool with ``consolidateAfter: Never`` and one budget (``--budget``, 10% of the nodes). Once
the pods run (10 simulated minutes in), a newer AMI with the EC2NodeClass's selector tag is
published, every node drifts, and the world is stepped timer by timer until it converges: every
node on the new image, no NodeClaim Drifted or being deleted, no pod pending.

Each size runs twice in the same world setup, once per pacing of the disruption controller
(``--pacings``; :mod:`agent.disruption.controller`): ``driftwave`` (every command the budgets
allow in one pass, a pass whenever a node finishes terminating) and ``karpenter`` (Karpenter's:
one drift command per pass, the next pass at once after a success, 10 s later otherwise). Both
charge each disruption pass's measured wall time to the simulated clock (the world's
``charge_wall_time``), as a real controller spends it: the commands a pass decides start once its
wall time has passed, so a slow pass costs simulated time.

The budget-bound minimum comes from the scenario's constants, never from the run::

    minimumSeconds = ceil(N / allowed) x replacementSeconds,   allowed = ceil(budget x N)
    replacementSeconds = boot + ready + drain + terminate

where one replacement, at the least, is (each read from its home in the code when the row is
made):

* ``boot``: :data:`agent.cloud.simulated.cloud.DEFAULT_BOOT_LATENCY` (30 s), from the
  replacement's launch to its kubelet registering (it includes ``DEFAULT_LAUNCH_LATENCY``, 10 s:
  the boot latency counts from the launch);
* ``ready``: :data:`agent.kube.simulated.kubelet.READY_AFTER` (10 s), from registration to Ready;
  the NodeClaim is then Initialized at once (the bench's NodePool has no startup taints, so the
  kubelet's ``STARTUP_TAINT_DELAY`` does not apply), and the orchestration queue deletes the
  candidate in the same round;
* ``drain``: 0 s: the simulated cluster deletes an evicted pod at once (pods' own
  ``terminationGracePeriodSeconds`` are not simulated), and the PodDisruptionBudget allows a
  whole round's evictions at once (10 x allowed pods <= 10% of the pods for the default sizes),
  so the terminator's eviction backoff (:data:`agent.termination.terminator.BACKOFF_BASE`) is
  not on the path;
* ``terminate``: :data:`agent.cloud.simulated.cloud.DEFAULT_TERMINATION_LATENCY` (0 s), from the
  instance's termination to its NodeClaim being released (the budget counts a node as
  disrupting until then).

The controllers' fixed intervals on the way are none: drift is detected when the EC2NodeClass
resolves the new image (:class:`agent.lifecycle.drift.DriftController`'s 5-minute re-check is not
needed) and drift acts without the validation period
(:data:`agent.disruption.pacing.VALIDATION`, 15 s, for emptiness and consolidation). The
polling period (:data:`agent.disruption.pacing.POLL`, 10 s) is on the way of Karpenter's
pacing only, between the last command of a round and the next pass, so it is left out of a
minimum both pacings share: it shows in the Karpenter pacing's ratio. The queue's command
timeout (10 min) and the lifecycle's retries only act on failures.

Reported per run:

* ``simulatedSeconds`` from the publication to convergence, ``minimumSeconds`` (above, with the
  constants in ``minimumConstants``) and ``ratio``: the first over the second;
* ``wallSeconds`` (``cpuSeconds``: CPU time) of the drift phase, ``provisionWallSeconds`` of
  building and provisioning, ``chargedSeconds``: the disruption passes' wall time charged to the
  simulated clock, and ``passes``;
* ``peakRssMB``: each run is a child process of its own, this is its ``ru_maxrss`` (the child
  raises the garbage collector's thresholds, as ``driftwave agent simulate`` and ``plan`` do:
  see :mod:`agent.sim.heap`);
* ``pdbViolations``: evictions that left a PodDisruptionBudget short (:mod:`agent.sim.metrics`).

A run stops at convergence or at its deadline: (ceil(N / allowed) + 6) x 10 simulated minutes
for the driftwave pacing; for Karpenter's, N x 10 simulated minutes or ``--karpenter-cap``
(default 180 s) of wall time in the drift phase, whichever comes first. A run stopped early is
reported as not converged, with ``stoppedBy``, the simulated seconds reached and the nodes
replaced by then (``nodesReplaced``).

Targets (driftwave pacing): 5,000 nodes / 50,000 pods within 60 s wall and 500 MB; a miss is
printed as ``MISSED`` and makes the exit code 1. Exits 1 too when a run breaks a PDB, or does
not converge unless it is a Karpenter-pacing run stopped by its wall cap (reported, not a
failure: the cap bounds the benchmark's own running time). Prints a table, or JSON rows with
``--json``.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from string import Template
from typing import Any

from agent.api.conditions import is_true
from agent.api.kube import Pod
from agent.api.nodeclaim import NodeClaim
from agent.cloud.simulated import cloud as simulated_cloud
from agent.cloud.simulated.amis import AMI
from agent.disruption.pacing import PACINGS, Pacing
from agent.kube.simulated import kubelet as simulated_kubelet
from agent.sim.heap import tune_for_large_simulations
from agent.sim.scenario_run import build_world, load_scenario
from agent.sim.world import World
from bench.cli import Parser, emit, working

ROOT = Path(__file__).resolve().parent.parent
SIZES = (100, 1000, 5000)
PODS_PER_NODE = 10
TAGS = {"driftwave.io/bench": "disruption"}
OLD_AMI, NEW_AMI = "ami-0000000000000b001", "ami-0000000000000b002"
PUBLISH_AFTER = timedelta(minutes=10)
PROVISION_LIMIT = timedelta(hours=1)
COMMAND_TIMEOUT = timedelta(minutes=10)
KARPENTER_CAP = 180.0
"""Wall seconds of drift phase after which a Karpenter-pacing run stops (``--karpenter-cap``)."""
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


class BenchError(RuntimeError):
    """The world does not run with the constants the minimum is computed from."""


def replacement_constants() -> dict[str, float]:
    """The seconds one replacement takes at the least, by part (see the module docstring), read
    from the simulator's constants now."""
    return {
        "boot": simulated_cloud.DEFAULT_BOOT_LATENCY.total_seconds(),
        "ready": simulated_kubelet.READY_AFTER.total_seconds(),
        "drain": 0.0,
        "terminate": simulated_cloud.DEFAULT_TERMINATION_LATENCY.total_seconds(),
    }


def allowed_by(budget: str, nodes: int) -> int:
    """What a budget of ``budget`` (a count or a percentage) allows of ``nodes``, rounded up."""
    return math.ceil(int(budget[:-1]) * nodes / 100) if budget.endswith("%") else int(budget)


def minimum_seconds(nodes: int, allowed: int) -> float:
    """The budget-bound minimum: ceil(nodes / allowed) rounds of one replacement."""
    return math.ceil(nodes / max(allowed, 1)) * sum(replacement_constants().values())


def build(
    nodes: int, budget: str, pdb: str | None, pacing: Pacing = "driftwave", charge: bool = True
) -> World:
    """The world of a run, loaded as a scenario file is (so its manifests are validated);
    raises :class:`BenchError` when its cloud or kubelet is not configured with the constants
    the minimum is computed from."""
    tags, pods = json.dumps(TAGS), nodes * PODS_PER_NODE
    text = SCENARIO.substitute(nodes=nodes, pods=pods, budget=budget, old=OLD_AMI, tags=tags)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "scenario.yaml")
        path.write_text(text + (PDB % pdb if pdb is not None else ""), encoding="utf-8")
        spec, objects = load_scenario(path)
    world = build_world(spec, objects, pacing=pacing, charge_wall_time=charge)
    configured = {
        "boot": world.cloud.boot_latency.total_seconds(),
        "ready": world.kubelet.ready_after.total_seconds(),
        "drain": 0.0,
        "terminate": world.cloud.termination_latency.total_seconds(),
    }
    if configured != replacement_constants():
        raise BenchError(f"the world runs with {configured}, not {replacement_constants()}")
    return world


def step(world: World) -> None:
    """Run the next due timers, then let the controllers settle (as ``scenario_run.run``)."""
    upcoming = world.clock.next_timer()
    assert upcoming is not None, "the controllers always poll: a timer is always queued"
    world.clock.run_until(upcoming)
    world.settle()


def pending_pods(world: World) -> int:
    """Pods bound to no node."""
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


def replaced(world: World) -> int:
    """NodeClaims on the new image."""
    return sum(1 for c in world.cluster.list(NodeClaim) if c.status.image_id == NEW_AMI)


def measure(
    nodes: int,
    budget: str = "10%",
    pdb: str | None = "10%",
    pacing: Pacing = "driftwave",
    cap: float = KARPENTER_CAP,
    charge: bool = True,
) -> dict[str, Any]:
    """One run in this process (see the module docstring): a JSON-ready row. ``cap`` is the
    Karpenter pacing's wall cap; ``charge`` charges the passes' wall time to the clock."""
    began = time.perf_counter()
    world = build(nodes, budget, pdb, pacing, charge)
    world.settle()
    ready_by = world.start + PUBLISH_AFTER
    while world.clock.now() < world.start + PROVISION_LIMIT and (
        world.clock.now() < ready_by or pending_pods(world)
    ):
        step(world)
    provision_wall = time.perf_counter() - began
    total = len(world.cluster.list(NodeClaim))
    allowed = allowed_by(budget, total)
    began, cpu, published = time.perf_counter(), time.process_time(), world.clock.now()
    charged, passes = world.disruption.charged, world.disruption.passes
    version = world.kubernetes_version
    world.amis.add(
        AMI(NEW_AMI, "bench-2", "AL2023", "v2", version, "amd64", created=published, tags=TAGS)
    )
    world.record("AMIPublished", f"ami/{NEW_AMI}", "bench-2", {"faulty": False})
    world.settle()
    rounds = math.ceil(total / max(allowed, 1))
    if pacing == "karpenter":
        deadline, wall_cap = published + total * COMMAND_TIMEOUT, cap
    else:
        deadline, wall_cap = published + (rounds + 6) * COMMAND_TIMEOUT, math.inf
    stopped_by = None
    while not converged(world):
        if world.clock.now() >= deadline:
            stopped_by = f"simulated deadline {(deadline - published).total_seconds():.0f} s"
            break
        if time.perf_counter() - began >= wall_cap:
            stopped_by = f"wall cap {wall_cap:g} s"
            break
        step(world)
    wall, cpu = time.perf_counter() - began, time.process_time() - cpu
    simulated = (world.clock.now() - published).total_seconds()
    minimum = minimum_seconds(total, allowed)
    done = converged(world)
    return {
        "nodes": total,
        "pods": len(world.cluster.list(Pod)),
        "pacing": pacing,
        "budget": budget,
        "pdb": pdb,
        "allowed": allowed,
        "converged": done,
        "stoppedBy": stopped_by,
        "nodesReplaced": replaced(world),
        "ratio": round(simulated / minimum, 4) if minimum else None,
        "simulatedSeconds": round(simulated, 3),
        "minimumSeconds": minimum,
        "minimumConstants": replacement_constants(),
        "rounds": rounds,
        "wallSeconds": round(wall, 3),
        "cpuSeconds": round(cpu, 3),
        "provisionWallSeconds": round(provision_wall, 3),
        "chargedSeconds": round((world.disruption.charged - charged).total_seconds(), 3),
        "passes": world.disruption.passes - passes,
        "peakRssMB": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "pdbViolations": len(world.metrics.pdb_violations),
        "pendingPods": pending_pods(world),
    }


TARGET_NODES = 5000
TARGET_WALL_SECONDS = 60.0
TARGET_RSS_MB = 500.0


def missed(row: dict[str, Any]) -> list[str]:
    """The targets a row misses: a driftwave-pacing run of 5,000 nodes within 60 s of wall time
    in its drift phase and 500 MB (other rows have no target)."""
    if row["pacing"] != "driftwave" or row["nodes"] != TARGET_NODES:
        return []
    run = f"{row['nodes']} nodes, driftwave pacing"
    out = []
    if row["wallSeconds"] > TARGET_WALL_SECONDS:
        out.append(f"{run}: {row['wallSeconds']} s wall, target {TARGET_WALL_SECONDS:g} s")
    if row["peakRssMB"] > TARGET_RSS_MB:
        out.append(f"{run}: {row['peakRssMB']} MB, target {TARGET_RSS_MB:g} MB")
    return out


def failed(row: dict[str, Any]) -> bool:
    """Whether a row fails the run (see the module docstring for the exit code)."""
    if row["pdbViolations"] > 0:
        return True
    capped = row["pacing"] == "karpenter" and str(row["stoppedBy"]).startswith("wall cap")
    return not row["converged"] and not capped


def _sizes(text: str) -> list[int]:
    if not re.fullmatch(r"[1-9][0-9]*(,[1-9][0-9]*)*", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of node counts")
    return [int(s) for s in text.split(",")]


def _pacings(text: str) -> list[Pacing]:
    names = text.split(",")
    if not names or any(name not in PACINGS for name in names):
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of pacings {PACINGS}")
    return ["karpenter" if name == "karpenter" else "driftwave" for name in names]


def _count(text: str) -> str:
    """An argparse type: a count, or a percentage from 1% to 100%."""
    if not re.fullmatch(r"(100|[1-9][0-9]?)%|[1-9][0-9]*", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a count or a percentage 1%-100%")
    return text


def _pdb(text: str) -> str:
    return text if text == "none" else _count(text)


def _cap(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """Run every size and pacing in a child process; 1 when a run fails (module docstring)."""
    parser = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=_sizes, default=list(SIZES), help="node counts")
    parser.add_argument("--budget", type=_count, default="10%", help="the NodePool's budget")
    parser.add_argument("--pdb", type=_pdb, default="10%", help="its maxUnavailable, or none")
    parser.add_argument(
        "--pacings", type=_pacings, default=list(PACINGS), help="driftwave,karpenter"
    )
    parser.add_argument(
        "--karpenter-cap",
        type=_cap,
        default=KARPENTER_CAP,
        help="wall seconds after which a Karpenter-pacing run stops",
    )
    parser.add_argument("--json", action="store_true", help="one JSON row per run")
    parser.add_argument("--one", type=_sizes, help=argparse.SUPPRESS)  # a child's own run
    args = parser.parse_args(argv)
    if args.one is not None:
        tune_for_large_simulations()  # as the simulate and plan commands do
        pdb = None if args.pdb == "none" else args.pdb
        row = measure(args.one[0], args.budget, pdb, args.pacings[0], args.karpenter_cap)
        print(json.dumps(row), flush=True)
        return 0
    failures = 0
    misses: list[str] = []
    runs = [(size, pacing) for size in args.sizes for pacing in args.pacings]
    for number, (size, pacing) in enumerate(runs):
        command = [sys.executable, "-m", "bench.disruption", "--one", str(size)]
        command += ["--budget", args.budget, "--pdb", args.pdb, "--pacings", pacing]
        command += ["--karpenter-cap", str(args.karpenter_cap)]
        with working(f"drifting {size} nodes, {pacing} pacing ({number + 1} of {len(runs)})"):
            child = subprocess.run(command, capture_output=True, text=True, check=False, cwd=ROOT)
        if child.returncode != 0:
            print(f"the run of {size} nodes ({pacing}) failed:\n{child.stderr}", file=sys.stderr)
            return 1
        row = json.loads(child.stdout.splitlines()[-1])
        failures += failed(row)
        misses += missed(row)
        emit(row, args.json, number == 0, lambda: HEADER, _line)
    if not args.json:
        print(
            "min s = ceil(nodes / allowed) x (boot + ready + drain + terminate) = "
            "ceil(nodes / allowed) x "
            f"{sum(replacement_constants().values()):.0f} s, from the simulator's constants"
        )
        print("each disruption pass's wall time is charged to the simulated clock")
        print("targets (driftwave): 5,000 nodes within 60 s wall (drift phase) and 500 MB")
    for miss in misses:
        print(f"MISSED: {miss}", file=sys.stderr)
    return 1 if failures or misses else 0


HEADER = (
    "nodes   pods allowed pacing    converged      sim s  min s    ratio  wall s   cpu s"
    "  prov s charged s passes RSS MB PDB viol"
)
LINE = (
    "{nodes:>5} {pods:>6} {allowed:>7} {pacing:<9} {status:>9} {sim:>10} "
    "{minimumSeconds:>6.0f} {ratio:>8} {wallSeconds:>7.1f} {cpuSeconds:>7.1f} "
    "{provisionWallSeconds:>7.1f} {chargedSeconds:>9.1f} {passes:>6} {peakRssMB:>6.0f} "
    "{pdbViolations:>8}"
)


def _line(row: dict[str, Any]) -> str:
    """A row as the table's line (and, for a run that did not converge, why, on the next)."""
    done = row["converged"]
    ratio = "n/a" if row["ratio"] is None else f"{row['ratio']:.3f}"
    fields = {
        **row,
        "status": "yes" if done else "NO",
        "sim": f"{row['simulatedSeconds']:.1f}" if done else f">{row['simulatedSeconds']:.0f}",
        "ratio": ratio if done else f">{ratio}",
    }
    line = LINE.format(**fields)
    if done:
        return line
    return (
        f"{line}\n      did not converge within {row['stoppedBy']}: "
        f"{row['nodesReplaced']} of {row['nodes']} nodes replaced "
        f"in {row['simulatedSeconds']:.0f} simulated s"
    )


if __name__ == "__main__":
    raise SystemExit(main())
