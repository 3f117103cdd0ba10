"""The live agent at scale, on a real control plane: ``python -m bench.agent_live [--nodes N]``.

One world (``tests/support/eksworld.py``: moto's EC2 behind the gap-filling proxy, a control
plane of its own with kwok Nodes) and ``driftwave agent serve --kubeconfig …`` (native driver)
as an operator runs it. The workload is one Deployment of ``10 x nodes`` pods on a NodePool of
one instance type (:data:`INSTANCE_TYPE`), each pod sized so that ten fill a node
(:data:`POD_CPU`), under a ``maxUnavailable: 10%`` PodDisruptionBudget and a ``10%`` node
budget. Measured:

(a) **provisioning**: the time until every pod is Running, and the nodes it took;
(b) **idle**: once the loop has finished the step it was in when the last pod became ready
    (a step that began after it has ended: the cluster is quiet), for ``--idle`` seconds
    nothing changes and nothing reads: the agent's CPU
    seconds per minute; then ``--idle`` seconds more with a client reading. Over both, the
    **steady-state round**: the duration of each step of the agent's loop (one pass of its
    controllers over the quiet cluster, the lock held), from the agent's own step histogram
    (:mod:`bench.loopsteps`): p50, p99 (bucket bounds) and mean; and apart from it the
    **interval between steps** (the loop sleeps :data:`TICK` between two): the gaps between
    the snapshots the client saw (the agent publishes one after every step, its ``time`` in
    the status document);
(c) **wave**: the drift wave of every node to the newer AL2023 release, applied through the
    agent's API (``PUT /v1/waves/ID``, as the fleet does); its time until the wave document
    says ``converged``, against the budget's minimum (the rounds a ``10%`` budget forces, and
    the seconds a round took) and ``POST /v1/plan``'s ETA; the loop's steps during it;
(d) **API latency**: from the second half of (b) to the end of (c) a client of its own
    (:mod:`bench.agent_reader`) reads ``/v1/status`` (and in (c) the wave,
    ``GET /v1/waves/ID``) every tenth of a second; p50 and p99 of each.

The agent's peak RSS (its process tree's summed ``VmHWM``) is read at the end. Targets: the
API's p99 ≤ 100 ms throughout, the steady-state round (a step's p99 while idle) ≤ 1 s, RSS
≤ 1 GiB at 5,000 nodes (checked at every size). Exit code 1 when a target is missed or a phase
did not finish. Ctrl-C (SIGINT) or SIGTERM stops the run at once: the agent, the control plane
and moto are stopped on the way out (:func:`stopping`).
"""

from __future__ import annotations

import argparse
import itertools
import logging
import math
import os
import re
import signal
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import httpx

from agent.kube.real.rest import KubeREST
from bench import loopsteps, procstat
from bench.agent_reader import Reader, Samples
from bench.cli import Parser, positive
from bench.live import machine, wait
from bench.live_cluster import DRIFTWAVE, disruption_budget, running_controller
from bench.loopsteps import Steps
from tests.support.awsseed import NEW_RELEASE
from tests.support.eksworld import AWS_TEST_CREDENTIALS, eks_world, nodeclass, nodepool, unbuilt
from tests.support.eksworld import deployment as make_deployment

PODS_PER_NODE = 10
INSTANCE_TYPE = "m5.xlarge"
POD_CPU, POD_MEMORY = "380m", "1Gi"
"""Ten fit in an m5.xlarge's allocatable 3.92 cpu; eleven do not."""
BUDGET_PERCENT = 10
TICK = 0.5
"""The agent loop's tick (``agent serve``'s default)."""
WAVE = "bench-wave"
P99_MS, ROUND_S, RSS_MB = 100.0, 1.0, 1024.0
PROGRESS_SECONDS = 30.0
"""How often a long phase says how it goes."""


@dataclass
class Result:
    """One run's figures (None: not measured, the phase did not finish)."""

    nodes_wanted: int
    nodes: int = 0
    provision_s: float | None = None
    settle_s: float | None = None
    """Seconds from the pods ready until a loop step begun after that had ended."""
    idle_cpu_per_min: float | None = None
    idle_steps: Steps | None = None
    """The loop's steps over both halves of the idle phase (:mod:`bench.loopsteps`)."""
    intervals_s: list[float] = field(default_factory=list)
    """Seconds between consecutive snapshots the client saw while idle."""
    wave_steps: Steps | None = None
    wave_s: float | None = None
    plan_eta_s: float | None = None
    idle: Samples = field(default_factory=Samples)
    wave: Samples = field(default_factory=Samples)
    peak_rss_mb: float = 0.0
    problems: list[str] = field(default_factory=list)


def percentile(values: list[float], share: float) -> float | None:
    """The ``share`` quantile (nearest rank) of ``values``; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]


def intervals(times: list[datetime]) -> list[float]:
    """Seconds between consecutive snapshot times: a step and the tick the loop slept before
    it (a snapshot the client did not see counts with the next)."""
    return [(b - a).total_seconds() for a, b in itertools.pairwise(times)]


def scrape(api: httpx.Client) -> Steps:
    """The agent's step histogram now."""
    answer = api.get("/metrics")
    answer.raise_for_status()
    return loopsteps.parse(answer.text)


def run(nodes: int, idle_s: int, timeout: float, wave_timeout: float, folder: Path) -> Result:
    """Provision, idle, then drift every node, with the agent served from a process."""
    result = Result(nodes)
    pods = nodes * PODS_PER_NODE
    with eks_world(folder) as world:
        rest = world.rest
        rest.request("POST", "/apis/karpenter.k8s.aws/v1/ec2nodeclasses", body=nodeclass())
        requirements = [
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
            {
                "key": "node.kubernetes.io/instance-type",
                "operator": "In",
                "values": [INSTANCE_TYPE],
            },
        ]
        pool = nodepool(budget=f"{BUDGET_PERCENT}%", requirements=requirements)
        rest.request("POST", "/apis/karpenter.sh/v1/nodepools", body=pool)
        rest.request(
            "POST",
            "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
            body=disruption_budget("app"),
        )
        with running_controller(DRIFTWAVE, world, folder / "agent") as pid:
            token = (folder / "agent" / "token").read_text()
            found = re.findall(r"listening on (\S+)", (folder / "agent" / "agent.log").read_text())
            api = httpx.Client(
                base_url=found[-1], headers={"Authorization": f"Bearer {token}"}, timeout=120
            )
            body = make_deployment("app", pods, POD_CPU, POD_MEMORY)
            rest.request("POST", "/apis/apps/v1/namespaces/default/deployments", body=body)
            say = Progress("provisioning")
            result.provision_s = wait(lambda: say.ready(_ready(rest), pods), timeout, 5.0)
            result.nodes = len(rest.request("GET", "/api/v1/nodes").get("items", []))
            if result.provision_s is None:
                result.problems.append(f"provisioning: {_ready(rest)} of {pods} pods ready")
            else:
                _idle_and_wave(api, token, pid, result, idle_s, wave_timeout)
            api.close()
            result.peak_rss_mb = procstat.usage([pid]).peak_rss_mb
            if world.nodes.error is not None:
                result.problems.append(f"instance nodes: last error {world.nodes.error}")
    return result


class Progress:
    """Says how a long phase goes, on standard error, at most every :data:`PROGRESS_SECONDS`."""

    def __init__(self, phase: str) -> None:
        self.phase = phase
        self.started = self.said = time.monotonic()

    def __call__(self, how: str) -> None:
        now = time.monotonic()
        if now - self.said >= PROGRESS_SECONDS:
            self.said = now
            print(
                f"  {self.phase}: {how} ({now - self.started:.0f} s)", file=sys.stderr, flush=True
            )

    def ready(self, ready: int, pods: int) -> bool:
        """Say how many of ``pods`` are ready; whether all are."""
        self(f"{ready:,} of {pods:,} pods ready")
        return ready == pods


def _ready(rest: KubeREST) -> int:
    """The workload's pods ready (its Deployment's count: one small read)."""
    found = rest.request("GET", "/apis/apps/v1/namespaces/default/deployments/app")
    return int((found.get("status") or {}).get("readyReplicas") or 0)


def _idle_and_wave(
    api: httpx.Client, token: str, pid: int, result: Result, idle_s: int, timeout: float
) -> None:
    counted = scrape(api).count
    result.settle_s = wait(lambda: scrape(api).count >= counted + 2, timeout, 0.5)
    if result.settle_s is None:
        result.problems.append(f"idle: the loop did not finish a step in {timeout:.0f}s")
        return
    steps = scrape(api)
    before = procstat.usage([pid])
    time.sleep(idle_s)
    result.idle_cpu_per_min = (procstat.usage([pid]) - before).cpu / idle_s * 60
    reader = Reader(str(api.base_url), token)
    try:
        _read_idle_and_wave(api, reader, steps, result, idle_s, timeout)
    finally:
        reader.close()


def _read_idle_and_wave(
    api: httpx.Client, reader: Reader, steps: Steps, result: Result, idle_s: int, timeout: float
) -> None:
    time.sleep(idle_s)
    result.idle = reader.switch()
    now = scrape(api)
    result.idle_steps, steps = now.since(steps), now
    result.intervals_s = intervals(result.idle.times)
    target = {"target": {"amiSelectorTerms": [{"alias": f"al2023@{NEW_RELEASE}"}]}}
    plan = api.post("/v1/plan", json=target).json()
    result.plan_eta_s = plan.get("etaSeconds")
    started = time.monotonic()
    applied = api.put(f"/v1/waves/{WAVE}", json=target)
    if applied.status_code not in (200, 201):
        result.problems.append(f"wave: HTTP {applied.status_code} {applied.text[:300]}")
        result.wave = reader.stop()
        result.wave_steps = scrape(api).since(steps)
        return
    reader.read_wave(WAVE)

    say = Progress("wave")

    def converged() -> bool:
        wave = api.get(f"/v1/waves/{WAVE}").json()
        phase, progress = wave["phase"], wave["progress"]
        if phase not in ("progressing", "converged"):
            raise RuntimeError(f"the wave is {phase}")
        say(f"{progress['nodesReplaced']:,} of {progress['nodes']:,} nodes replaced")
        return bool(phase == "converged")

    try:
        result.wave_s = wait(converged, timeout, 1.0)
    except RuntimeError as exc:
        result.problems.append(str(exc))
    if result.wave_s is None and not result.problems:
        progress = api.get(f"/v1/waves/{WAVE}").json()["progress"]
        result.problems.append(
            f"wave: not converged in {time.monotonic() - started:.0f}s "
            f"({progress['nodesReplaced']} of {progress['nodes']} nodes replaced)"
        )
    result.wave = reader.stop()
    result.wave_steps = scrape(api).since(steps)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} ms"


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} s"


def _bound(value: float | None) -> str:
    return "-" if value is None else f"<= {value:g} s"


def _mark(value: float | None, most: float) -> str:
    return "missed (not measured)" if value is None else ("met" if value <= most else "missed")


def table(result: Result) -> tuple[str, bool]:
    """The table of one run, and whether every target was met."""
    rows: list[tuple[str, str, str]] = [
        ("nodes / pods Running", f"{result.nodes} / {result.nodes_wanted * PODS_PER_NODE}", ""),
        ("provisioning", _s(result.provision_s), ""),
        ("then until the loop's step in course ended", _s(result.settle_s), ""),
        ("idle CPU per minute", _s(result.idle_cpu_per_min), ""),
    ]
    marks = []
    for phase, steps in (("idle", result.idle_steps), ("wave", result.wave_steps)):
        count = 0 if steps is None else steps.count
        p50 = None if steps is None else steps.quantile(0.5)
        p99 = None if steps is None else steps.quantile(0.99)
        mean = None if steps is None else steps.mean()
        shown = f"p50 {_bound(p50)}, p99 {_bound(p99)}, mean {_s(mean)}"
        if phase == "idle":
            marks.append(_mark(p99, ROUND_S))
            target = f"steady-state round: p99 <= {ROUND_S:.0f} s: {marks[-1]}"
        else:
            target = f"slowest {_bound(None if steps is None else steps.quantile(1.0))}"
        rows.append((f"loop step while {phase} ({count} steps)", shown, target))
    gaps = result.intervals_s
    rows.append(
        (
            f"interval between steps while idle ({len(gaps)})",
            f"p50 {_s(percentile(gaps, 0.5))}, p99 {_s(percentile(gaps, 0.99))}",
            f"the loop sleeps {TICK:g} s between two steps",
        )
    )
    for phase, samples in (("idle", result.idle), ("wave", result.wave)):
        routes = [("/v1/status", samples.status_ms)]
        if phase == "wave":
            routes.append(("wave read", samples.wave_ms))
        for route, values in routes:
            p50, p99 = percentile(values, 0.5), percentile(values, 0.99)
            marks.append(_mark(p99, P99_MS))
            rows.append(
                (
                    f"{route} while {phase} ({len(values)} reads)",
                    f"p50 {_ms(p50)}, p99 {_ms(p99)}",
                    f"p99 <= {P99_MS:.0f} ms: {marks[-1]}",
                )
            )
    most = math.ceil(result.nodes * BUDGET_PERCENT / 100) or 1
    least = math.ceil(result.nodes / most)
    per_round = None if result.wave_s is None else result.wave_s / least
    rows.append(
        (
            "wave converged",
            _s(result.wave_s),
            f"the budget's minimum: {least} rounds of {most} nodes ({_s(per_round)} a round); "
            f"plan's ETA {_s(result.plan_eta_s)}",
        )
    )
    marks.append(_mark(result.peak_rss_mb, RSS_MB))
    rows.append(("agent peak RSS", f"{result.peak_rss_mb:.0f} MB", f"<= 1 GiB: {marks[-1]}"))
    width = max(len(r[0]) for r in rows)
    value_width = max(len(r[1]) for r in rows)
    lines = [f"{a:<{width}}  {b:<{value_width}}  {c}".rstrip() for a, b, c in rows]
    return "\n".join(lines), all(m == "met" for m in marks)


@contextmanager
def stopping() -> Iterator[None]:
    """While the block runs, SIGINT and SIGTERM raise KeyboardInterrupt in the main thread, so
    every ``with`` on the way out stops what it started (the reading client, the agent, the
    control plane, moto's server, the Nodes' thread); SIGINT too when the benchmark was started
    with it ignored (a background job of a shell without job control). Restored afterwards."""
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    for sig in previous:
        signal.signal(sig, _interrupt)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def main(argv: Sequence[str] | None = None) -> int:
    """Run at each size and print its table (module docstring)."""
    parser = Parser(prog="python -m bench.agent_live", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--nodes", default="1000,5000", help="node counts, in order (default: 1000,5000)"
    )
    parser.add_argument("--idle", type=positive, default=60, help="idle seconds (default: 60)")
    parser.add_argument(
        "--timeout", type=positive, default=3600, help="seconds a phase may take (default: 3600)"
    )
    parser.add_argument(
        "--wave-timeout", type=positive, help="seconds the wave may take (default: --timeout)"
    )
    parser.add_argument("--keep", type=Path, help="keep the worlds' logs in this folder")
    args = parser.parse_args(argv)
    sizes = [int(n) for n in args.nodes.split(",") if n.strip()]
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # moto's server: a line a request
    if missing := unbuilt():
        print(
            f"bench.agent_live: not built: {', '.join(missing)} (run make tools)", file=sys.stderr
        )
        return 1
    for name, value in AWS_TEST_CREDENTIALS.items():
        os.environ.setdefault(name, value)
    try:
        with stopping():
            return _run_sizes(sizes, args)
    except KeyboardInterrupt as exc:
        print(f"bench.agent_live: stopped by {exc or 'SIGINT'}", file=sys.stderr)
        return 130


def _run_sizes(sizes: list[int], args: argparse.Namespace) -> int:
    failed = False
    with tempfile.TemporaryDirectory(prefix="bench-agent-live-") as scratch:
        for nodes in sizes:
            print(f"machine: {machine()}; load average: {os.getloadavg()[0]:.2f}", flush=True)
            folder = (args.keep or Path(scratch)) / str(nodes)
            result = run(nodes, args.idle, args.timeout, args.wave_timeout or args.timeout, folder)
            shown, met = table(result)
            print(f"\n{nodes} nodes x {PODS_PER_NODE} pods (load average after: "
                  f"{os.getloadavg()[0]:.2f})\n{shown}\n", flush=True)  # fmt: skip
            for problem in result.problems + result.idle.errors[:5] + result.wave.errors[:5]:
                print(f"problem: {problem}", file=sys.stderr)
            failed = failed or not met or bool(result.problems)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
