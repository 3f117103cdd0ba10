"""Karpenter's own AWS controller (v1.14.1, built by ``make tools`` into ``.tools/bin/karpenter``)
running out of cluster against the test control plane, with EC2, SSM, EKS and IAM at moto's
server (``AWS_ENDPOINT_URL``, usually the gap-filling proxy of :mod:`tests.support.ec2gaps`).

It runs as Karpenter's Helm chart runs it, with what an out-of-cluster start must add:

* its CRDs are Karpenter's own, copied from the pinned module by ``make tools`` into
  ``.tools/karpenter-crds`` (:func:`install_crds`);
* leader election on, its lease in ``kube-system``; metrics and health probes on ports of their
  own (Karpenter binds them on every interface; there is no address option);
* ``CLUSTER_ENDPOINT`` is the test API server and ``EKS_CONTROL_PLANE=true`` (the Kubernetes
  version comes from EKS ``DescribeCluster``, as the seeded cluster's 1.31 AMIs expect);
* ``ISOLATED_VPC=true``: moto has no Price List API, so Karpenter uses the on-demand prices
  built into its release, which is what it does in a VPC without the pricing endpoint.

:class:`Karpenter` starts it, waits until it is healthy and leads, kills it with SIGKILL (a crash)
and starts it again, and reads its metrics and log. It runs as a process group on the control
plane's record (:mod:`tests.support.groups`, log ``karpenter.log`` in the plane's directory), so
the plane's teardown and ``make controlplane-down`` stop it too.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from common.ports import free_ports
from tests.support.controlplane import BIN, ROOT, ControlPlane
from tests.support.groups import ProcessGroups, StopReport

BINARY = BIN / "karpenter"
CRDS = ROOT / ".tools" / "karpenter-crds"
LEASE = "karpenter-leader-election"
NAMESPACE = "kube-system"


class KarpenterError(RuntimeError):
    """Karpenter did not start (not built, exited, never healthy or never leader)."""


def missing() -> list[str]:
    """What ``make tools`` has not built yet for running Karpenter."""
    found = []
    if not BINARY.is_file():
        found.append("karpenter")
    if not CRDS.is_dir() or not list(CRDS.glob("*.yaml")):
        found.append("karpenter-crds")
    return found


def install_crds(plane: ControlPlane) -> None:
    """Replace the control plane's CRDs with Karpenter's own (and add NodeOverlay and
    CapacityBuffer, which the agent's chart does not carry)."""
    plane.apply_crds(CRDS)


@dataclass
class Karpenter:
    """One Karpenter controller for one cluster (see the module docstring)."""

    plane: ControlPlane
    aws_url: str
    cluster: str = "prod-1"
    region: str = "us-east-1"
    settings: dict[str, str] = field(default_factory=dict)
    """Extra environment (Karpenter's options: ``BATCH_MAX_DURATION``, ``FEATURE_GATES``…)."""
    process: subprocess.Popen[bytes] | None = None
    metrics_port: int = 0
    health_port: int = 0
    starts: int = 0
    groups: ProcessGroups | None = None

    def environment(self) -> dict[str, str]:
        """The environment Karpenter runs with."""
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "KUBECONFIG": str(self.plane.kubeconfig),
            "AWS_ENDPOINT_URL": self.aws_url,
            "AWS_REGION": self.region,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_EC2_METADATA_DISABLED": "true",
            "CLUSTER_NAME": self.cluster,
            "CLUSTER_ENDPOINT": self.plane.server,
            "EKS_CONTROL_PLANE": "true",
            "ISOLATED_VPC": "true",
            "METRICS_PORT": str(self.metrics_port),
            "HEALTH_PROBE_PORT": str(self.health_port),
            "LEADER_ELECTION_NAMESPACE": NAMESPACE,
            "SYSTEM_NAMESPACE": NAMESPACE,
            "LOG_LEVEL": "debug",
            **self.settings,
        }

    @property
    def log_path(self) -> Path:
        """Where its output goes (every start appends)."""
        return self.plane.root / "karpenter.log"

    def start(self, timeout: float = 120) -> None:
        """Start it and wait until it is healthy and holds the leader lease."""
        if missing_now := missing():
            raise KarpenterError(f"not built: {', '.join(missing_now)} (run make tools)")
        if self.groups is None:
            self.groups = ProcessGroups(self.plane.root, die_with_parent=True)
        self.metrics_port, self.health_port = free_ports(2)
        self.process = self.groups.start("karpenter", [str(BINARY)], env=self.environment())
        self.starts += 1
        self._wait_ready(timeout)

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise KarpenterError(
                    f"karpenter exited with {self.process.returncode}: {self.tail()}"
                )
            if self._healthy() and self.leads():
                return
            time.sleep(0.5)
        raise KarpenterError(f"karpenter not ready after {timeout:.0f}s: {self.tail()}")

    def _healthy(self) -> bool:
        try:
            answer = httpx.get(f"http://127.0.0.1:{self.health_port}/readyz", timeout=5)
        except httpx.HTTPError:
            return False
        return answer.status_code == 200

    def leads(self) -> bool:
        """Whether this start's log says it acquired the leader lease."""
        text = self.log_path.read_text(errors="replace").lower()
        return text.count("successfully acquired lease") >= self.starts

    def kill(self) -> None:
        """SIGKILL its process group, as a crashed pod's container dies."""
        if self.groups is not None:
            self._check(self.groups.kill("karpenter"))

    def stop(self) -> None:
        """SIGTERM (Karpenter's graceful shutdown), SIGKILL after 10 s."""
        if self.groups is not None:
            self._check(self.groups.stop(grace=10))

    @staticmethod
    def _check(report: StopReport) -> None:
        if not report.clean:
            raise KarpenterError(f"karpenter did not stop: {report.describe()}")

    def metrics(self) -> str:
        """Its Prometheus exposition."""
        return httpx.get(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=10).text

    def reconciles(self, controller: str) -> float:
        """How many reconciles of ``controller`` it finished without error (controller-runtime's
        ``controller_runtime_reconcile_total``), since this start."""
        wanted = f'controller="{controller}"'
        return sum(
            float(line.rsplit(" ", 1)[1])
            for line in self.metrics().splitlines()
            if line.startswith("controller_runtime_reconcile_total{")
            and wanted in line
            and 'result="error"' not in line
        )

    def tail(self, lines: int = 20) -> str:
        """The last messages it logged that are not debug chatter."""
        if not self.log_path.exists():
            return "(no log)"
        kept = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                kept.append(line)
                continue
            if entry.get("level") != "DEBUG":
                kept.append(f"{entry.get('level')} {entry.get('message')} {entry.get('error', '')}")
        return "\n".join(kept[-lines:])

    def messages(self, text: str) -> list[dict[str, object]]:
        """Its log entries whose message contains ``text``."""
        found = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            if text in line:
                try:
                    found.append(json.loads(line))
                except ValueError:
                    continue
        return found


@contextmanager
def running_karpenter(plane: ControlPlane, aws_url: str, **options: object) -> Iterator[Karpenter]:
    """Karpenter's CRDs installed and its controller running; stopped when the block ends."""
    install_crds(plane)
    karpenter = Karpenter(plane, aws_url, **options)  # type: ignore[arg-type]
    try:
        karpenter.start()
        yield karpenter
    finally:
        karpenter.stop()
