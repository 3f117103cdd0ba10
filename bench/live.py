"""Karpenter's own controller and the native agent side by side, each on a real cluster of its
own built the same way: ``python -m bench.live [--pods N] [--consolidation-wait S]``.

Each controller gets a fresh world (``tests/support/eksworld.py``: moto's server behind the
gap-filling proxy, the seeded EKS account, a control plane of its own with Karpenter's CRDs, the
same EC2NodeClass and NodePool) and the same workload (``bench/live_cluster.py``: Deployments of
eight cpu/memory shapes, a PodDisruptionBudget of ``maxUnavailable: 10%`` on each). Karpenter
runs first, then the agent (``driftwave agent serve --kubeconfig …``, native driver); the same
code measures both:

(a) **provisioning**: the controller is started and ready, then the Deployments are created;
    the time until every pod is Running, the nodes, their price per hour (the agent's packaged
    us-east-1 on-demand price list, the same table for both), the controller's CPU seconds;
(b) **drift**: the EC2NodeClass's ``amiSelectorTerms`` moves to the newer AL2023 release under
    a ``10%`` node budget; the time until every NodeClaim is on the new image with its Node and
    every pod Running, sampled about once a second for the most NodeClaims disrupted at once
    (deleting, or their Node tainted ``karpenter.sh/disrupted``) against what the budget allows
    at that moment (10 % of the Nodes then, rounded up), for the most pods any PDB was short
    of its minimum, and, from the API server's audit log over the wave, the evictions it allowed
    and refused and the pods deleted without an eviction by anything but the cluster's own
    controllers and kubelets;
(c) **consolidation**: the NodePool gets ``consolidationPolicy: WhenEmptyOrUnderutilized`` and
    ``consolidateAfter: 30s``, every Deployment is scaled to half, and after
    ``--consolidation-wait`` seconds the nodes and their price are read.

The controller's peak RSS (its process tree's summed ``VmHWM``) is read at the end. Every figure
is measured in the run; nothing is tuned to the inputs. The machine and its load average before
and after are printed. Each row of the table says which controller did better and by what
ratio (lower is better for every row; a tie when equal). Exit code 1 when a phase of either
controller did not finish (the table still says what was measured), or when the tools are not
built.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from agent.catalog.pricing import OnDemandPrices
from bench import procstat
from bench.cli import Parser, positive
from bench.live_cluster import (
    CONTROLLERS,
    DRIFTWAVE,
    KARPENTER,
    Look,
    create_workload,
    look,
    merge_patch,
    replicas,
    running_controller,
    scale_workload,
)
from tests.support.awsseed import NEW_RELEASE
from tests.support.eksworld import (
    AWS_TEST_CREDENTIALS,
    EKSWorld,
    eks_world,
    nodeclass,
    nodepool,
    unbuilt,
)

BUDGET_PERCENT = 10
CONSOLIDATE_AFTER = "30s"
LABELS = {KARPENTER: "Karpenter v1.14.1", DRIFTWAVE: "driftwave agent"}
SYSTEM_AGENTS = ("kwok", "kube-controller-manager", "kube-scheduler", "kube-apiserver")
"""User agents whose pod deletions are the cluster's own (kubelets, garbage collection)."""


@dataclass
class Result:
    """What one controller's run measured (``None``: the phase did not finish)."""

    controller: str
    pods: int
    provision_s: float | None = None
    nodes: int = 0
    hourly: float = 0.0
    provision_cpu: float = 0.0
    drift_s: float | None = None
    drift_nodes_replaced: int = 0
    most_disrupted: int = 0
    allowed_then: int = 0
    over_budget_samples: int = 0
    pdb_short: int = 0
    evictions_allowed: int = 0
    evictions_refused: int = 0
    deleted_without_eviction: int = 0
    drift_cpu: float = 0.0
    consolidated_nodes: int | None = None
    consolidated_hourly: float | None = None
    consolidation_cpu: float = 0.0
    peak_rss_mb: float = 0.0
    problems: list[str] = field(default_factory=list)


def wait(check: Callable[[], bool], timeout: float, interval: float = 1.0) -> float | None:
    """Seconds until ``check()`` held, or None after ``timeout``."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if check():
            return time.monotonic() - start
        time.sleep(interval)
    return None


def audit_since(path: Path, offset: int) -> tuple[int, int, int]:
    """From the audit log after byte ``offset``: evictions allowed and refused, and pods deleted
    without an eviction by a client other than the cluster's own (:data:`SYSTEM_AGENTS`)."""
    allowed = refused = deleted = 0
    with path.open("rb") as log:
        log.seek(offset)
        for line in log:
            event = json.loads(line)
            ref = event.get("objectRef") or {}
            if ref.get("resource") != "pods" or event.get("stage") != "ResponseComplete":
                continue
            code = (event.get("responseStatus") or {}).get("code", 0)
            if ref.get("subresource") == "eviction" and event.get("verb") == "create":
                allowed += code < 300
                refused += code == 429
            elif not ref.get("subresource") and event.get("verb") == "delete" and code < 300:
                agent = event.get("userAgent", "")
                deleted += not agent.startswith(SYSTEM_AGENTS)
    return allowed, refused, deleted


def run_one(kind: str, pods: int, wait_s: float, timeout: float, folder: Path) -> Result:
    """Run the three phases with ``kind`` on a fresh world in ``folder``."""
    result = Result(kind, pods)
    prices = OnDemandPrices.packaged()
    with eks_world(folder) as world:
        rest = world.rest
        rest.request("POST", "/apis/karpenter.k8s.aws/v1/ec2nodeclasses", body=nodeclass())
        pool = nodepool(budget=f"{BUDGET_PERCENT}%")
        rest.request("POST", "/apis/karpenter.sh/v1/nodepools", body=pool)
        with running_controller(kind, world, folder / kind) as pid:
            before = procstat.usage([pid])
            create_workload(rest, pods)
            result.provision_s = wait(lambda: look(rest).running_pods() == pods, timeout)
            seen = look(rest)
            result.nodes, result.hourly = seen.node_count(), seen.hourly(prices)
            if unpriced := seen.unpriced(prices):
                result.problems.append(f"no on-demand price for {', '.join(unpriced)}")
            after = procstat.usage([pid])
            result.provision_cpu = (after - before).cpu
            if result.provision_s is None:
                result.problems.append(f"provisioning: {seen.running_pods()} of {pods} Running")
            else:
                _drift(world, pid, result, timeout)
                _consolidate(world, pid, result, wait_s, prices)
            result.peak_rss_mb = procstat.usage([pid]).peak_rss_mb
            if world.nodes.error is not None:
                result.problems.append(f"instance nodes: last error {world.nodes.error}")
    return result


def _drift(world: EKSWorld, pid: int, result: Result, timeout: float) -> None:
    rest = world.rest
    new = world.images[NEW_RELEASE]
    audit = world.plane.root / "audit.log"
    offset = audit.stat().st_size
    start_claims = {c["metadata"]["name"] for c in look(rest).claims}
    before = procstat.usage([pid])
    merge_patch(
        rest,
        "/apis/karpenter.k8s.aws/v1/ec2nodeclasses/default",
        {"spec": {"amiSelectorTerms": [{"alias": f"al2023@{NEW_RELEASE}"}]}},
    )
    started = time.monotonic()
    done = False
    while time.monotonic() - started < timeout:
        seen = look(rest)
        disrupted = len(seen.disrupted())
        allowed = seen.allowed(BUDGET_PERCENT)
        if disrupted > result.most_disrupted:
            result.most_disrupted, result.allowed_then = disrupted, allowed
        result.over_budget_samples += disrupted > allowed
        result.pdb_short = max(result.pdb_short, seen.below_pdb())
        if seen.on_image(new) and seen.running_pods() == result.pods:
            done = True
            break
        time.sleep(1.0)
    elapsed = time.monotonic() - started
    result.drift_s = elapsed if done else None
    now = {c["metadata"]["name"] for c in look(rest).claims}
    result.drift_nodes_replaced = len(start_claims - now)
    if not done:
        result.problems.append(
            f"drift: {result.drift_nodes_replaced} of {len(start_claims)} NodeClaims replaced "
            f"in {elapsed:.0f}s"
        )
    result.evictions_allowed, result.evictions_refused, result.deleted_without_eviction = (
        audit_since(audit, offset)
    )
    result.drift_cpu = (procstat.usage([pid]) - before).cpu


def _consolidate(
    world: EKSWorld, pid: int, result: Result, wait_s: float, prices: OnDemandPrices
) -> None:
    rest = world.rest
    before = procstat.usage([pid])
    disruption = {
        "consolidationPolicy": "WhenEmptyOrUnderutilized",
        "consolidateAfter": CONSOLIDATE_AFTER,
        "budgets": [{"nodes": f"{BUDGET_PERCENT}%"}],
    }
    merge_patch(
        rest, "/apis/karpenter.sh/v1/nodepools/general", {"spec": {"disruption": disruption}}
    )
    half = {name: count // 2 for name, count in replicas(result.pods).items() if count}
    scale_workload(rest, half)
    time.sleep(wait_s)
    seen: Look = look(rest)
    result.consolidated_nodes, result.consolidated_hourly = seen.node_count(), seen.hourly(prices)
    if seen.running_pods() != sum(half.values()):
        result.problems.append(
            f"consolidation: {seen.running_pods()} of {sum(half.values())} pods Running at the end"
        )
    result.consolidation_cpu = (procstat.usage([pid]) - before).cpu


Row = tuple[str, Callable[[Result], float | None], str]


def rows(wait_s: float) -> list[Row]:
    """The table's rows: a label, the figure of a result (None: not measured), its format."""
    minutes = f"{wait_s / 60:g} min" if wait_s >= 60 else f"{wait_s:g} s"
    return [
        ("(a) time until every pod Running, s", lambda r: r.provision_s, "{:.1f}"),
        ("(a) nodes", lambda r: r.nodes if r.provision_s is not None else None, "{:.0f}"),
        (
            "(a) $/h (on-demand)",
            lambda r: r.hourly if r.provision_s is not None else None,
            "{:.2f}",
        ),
        ("(a) controller CPU s", lambda r: r.provision_cpu, "{:.1f}"),
        ("(b) time to converge on the new image, s", lambda r: r.drift_s, "{:.1f}"),
        ("(b) most NodeClaims disrupted at once", lambda r: r.most_disrupted, "{:.0f}"),
        ("(b) samples over the 10% budget", lambda r: r.over_budget_samples, "{:.0f}"),
        ("(b) most pods below a PDB's minimum", lambda r: r.pdb_short, "{:.0f}"),
        ("(b) pods deleted without an eviction", lambda r: r.deleted_without_eviction, "{:.0f}"),
        ("(b) evictions refused (429)", lambda r: r.evictions_refused, "{:.0f}"),
        ("(b) controller CPU s", lambda r: r.drift_cpu, "{:.1f}"),
        (f"(c) nodes {minutes} after scaling to half", lambda r: r.consolidated_nodes, "{:.0f}"),
        (f"(c) $/h {minutes} after scaling to half", lambda r: r.consolidated_hourly, "{:.2f}"),
        ("(c) controller CPU s", lambda r: r.consolidation_cpu, "{:.1f}"),
        ("controller peak RSS MB", lambda r: r.peak_rss_mb, "{:.0f}"),
    ]


def verdict(karpenter: float | None, driftwave: float | None) -> str:
    """Which did better (lower is better) and by what ratio."""
    if karpenter is None or driftwave is None:
        return "-"
    if karpenter == driftwave:
        return "tie"
    low, high = sorted((karpenter, driftwave))
    who = LABELS[DRIFTWAVE] if driftwave < karpenter else LABELS[KARPENTER]
    ratio = "inf" if low == 0 else f"{high / low:.2f}"
    return f"{who} ({ratio}x)"


def table(results: dict[str, Result], wait_s: float) -> str:
    """The side-by-side Markdown table."""
    karpenter, ours = results[KARPENTER], results[DRIFTWAVE]
    lines = [
        f"| measure | {LABELS[KARPENTER]} | {LABELS[DRIFTWAVE]} | better (ratio) |",
        "| --- | ---: | ---: | --- |",
    ]
    for label, figure, fmt in rows(wait_s):
        a, b = figure(karpenter), figure(ours)
        shown = [fmt.format(v) if v is not None else "did not finish" for v in (a, b)]
        lines.append(f"| {label} | {shown[0]} | {shown[1]} | {verdict(a, b)} |")
    allowed = [
        f"{LABELS[r.controller]}: {r.most_disrupted} at once when the budget allowed "
        f"{r.allowed_then}; {r.evictions_allowed} evictions allowed, {r.drift_nodes_replaced} "
        "NodeClaims replaced"
        for r in (karpenter, ours)
    ]
    return "\n".join([*lines, "", *allowed])


def machine() -> str:
    """The machine the run is on."""
    memory = "?"
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        kb = int(meminfo.read_text().split("MemTotal:")[1].split()[0])
        memory = f"{kb / 1024 / 1024:.0f} GiB"
    return (
        f"{platform.machine()}, {os.cpu_count()} cores, {memory}, "
        f"Python {platform.python_version()}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run both controllers and print the table (module docstring)."""
    parser = Parser(prog="python -m bench.live", description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=positive, default=1000, help="pending pods (default: 1000)")
    parser.add_argument(
        "--consolidation-wait",
        type=positive,
        default=600,
        help="seconds after scaling down before nodes are counted (default: 600)",
    )
    parser.add_argument(
        "--timeout",
        type=positive,
        default=1800,
        help="seconds provisioning or the drift wave may take (default: 1800)",
    )
    parser.add_argument(
        "--controllers",
        default=",".join(CONTROLLERS),
        help="which to run, in order (default: karpenter,driftwave)",
    )
    parser.add_argument("--keep", type=Path, help="keep the worlds' logs in this folder")
    parser.add_argument("--json", action="store_true", help="one JSON row per controller")
    args = parser.parse_args(argv)
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # moto's server: a line a request
    chosen = [c for c in args.controllers.split(",") if c]
    if not chosen or any(c not in CONTROLLERS for c in chosen):
        parser.error(
            f"--controllers: {args.controllers!r} (rule: a list of {', '.join(CONTROLLERS)})"
        )
    if missing := unbuilt():
        print(f"bench.live: not built: {', '.join(missing)} (run make tools)", file=sys.stderr)
        return 1
    for name, value in AWS_TEST_CREDENTIALS.items():
        os.environ.setdefault(name, value)
    print(f"machine: {machine()}; load average before: {os.getloadavg()[0]:.2f}", flush=True)
    results: dict[str, Result] = {}
    with tempfile.TemporaryDirectory(prefix="bench-live-") as scratch:
        root = args.keep or Path(scratch)
        for kind in chosen:
            print(f"running {LABELS[kind]} ({args.pods} pods)…", file=sys.stderr, flush=True)
            results[kind] = run_one(
                kind, args.pods, args.consolidation_wait, args.timeout, root / kind
            )
            if args.json:
                print(json.dumps(asdict(results[kind])), flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}", flush=True)
    if not args.json and len(results) == len(CONTROLLERS):
        print(f"\n{args.pods} pods, consolidation read after {args.consolidation_wait} s\n")
        print(table(results, args.consolidation_wait))
    problems = [f"{LABELS[k]}: {p}" for k, r in results.items() for p in r.problems]
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
