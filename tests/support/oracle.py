"""Karpenter as the test oracle: a client for ``karpenter-oracle`` (``tools/karpenter-oracle``).

``make tools`` builds the oracle into ``.tools/bin``: a small Go program that imports Karpenter
(core and AWS provider v1.14.1, the release the agent follows) and answers JSON with Karpenter's
own results. One process serves many requests (one JSON line in, one JSON line out), so a test
session starts it once (the ``karpenter_oracle`` fixture of ``tests/differential``).

Ops (fields as the Go side documents them):

* ``nodepool-hash`` / ``ec2nodeclass-hash``: the hash and hash version Karpenter stamps;
* ``allowed-disruptions``: what a NodePool's budgets allow for a reason at a time;
* ``schedule``: the NodeClaims Karpenter's provisioning scheduler plans for pods;
* ``drift``: Karpenter's drift reason for a launched NodeClaim;
* ``cron-next``: Karpenter's cron library on a schedule read in a time zone: whether it parses,
  its next firing after a time, and whether a budget with a duration is active at a time.
* ``nodepool-runtime-validate``: Karpenter's runtime validation of a NodePool (``valid``,
  ``message``);
* ``label-sets``: the well-known labels, restricted label domains and labels, and the known
  requirement values, as the AWS provider extends them.
* ``benchmark-instance-types``: the instance types of Karpenter's own scheduling benchmark
  (``fake.InstanceTypes(n)``) described; a ``schedule`` request with ``benchmark`` (and
  ``benchmarkInstanceTypes``) builds the scheduler as that benchmark does, on those types.

Objects go in as Karpenter's JSON (``karpenter.sh/v1``, ``karpenter.k8s.aws/v1``, core/v1 Pods)
and are defaulted by the CRDs' schemas as the API server stores them. :func:`instance_type_spec`
writes a catalog instance type the way the oracle reads one. The product never runs the oracle.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from agent.catalog import InstanceType, Offering

ROOT = Path(__file__).resolve().parents[2]
BINARY = ROOT / ".tools" / "bin" / "karpenter-oracle"
KARPENTER_RELEASE = "v1.14.1"
"""The Karpenter release (core and AWS provider) the oracle is built from."""


class OracleError(RuntimeError):
    """The oracle answered a request with an error, or stopped answering."""


def missing_oracle(binary: Path = BINARY) -> str | None:
    """Why the oracle cannot run here (None: it can)."""
    if not binary.is_file():
        return "karpenter-oracle not built (make tools; needs Go)"
    return None


class KarpenterOracle:
    """One running ``karpenter-oracle`` process; :meth:`ask` sends a request, waits for its
    answer. Not thread-safe: one request at a time."""

    def __init__(self, binary: Path = BINARY) -> None:
        self._process = subprocess.Popen(
            [str(binary)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
        )

    def _pipes(self) -> tuple[IO[str], IO[str]]:
        stdin, stdout = self._process.stdin, self._process.stdout
        if stdin is None or stdout is None:
            raise OracleError("the oracle's pipes are closed")
        return stdin, stdout

    def ask(self, op: str, **fields: Any) -> dict[str, Any]:
        """Karpenter's answer to ``op`` with ``fields``; raises :class:`OracleError` when the
        oracle answers ``{"error": ...}`` or has exited."""
        stdin, stdout = self._pipes()
        try:
            stdin.write(json.dumps({"op": op, **fields}) + "\n")
            stdin.flush()
        except BrokenPipeError as exc:
            raise OracleError(f"{op}: the oracle has exited") from exc
        line = stdout.readline()
        if not line:
            code = self._process.wait(timeout=10)
            raise OracleError(f"{op}: the oracle exited (status {code}) without answering")
        answer: dict[str, Any] = json.loads(line)
        if "error" in answer:
            raise OracleError(f"{op}: {answer['error']}")
        return answer

    def close(self) -> None:
        """End the process (closing its input ends it)."""
        stdin = self._process.stdin
        if stdin is not None and not stdin.closed:
            stdin.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()

    def __enter__(self) -> KarpenterOracle:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()


def _quantities(resources: Mapping[str, int]) -> dict[str, str]:
    """Resource amounts in base units as Kubernetes quantities (CPU in millicores)."""
    return {
        name: f"{amount}m" if name == "cpu" else str(amount) for name, amount in resources.items()
    }


def instance_type_spec(
    instance_type: InstanceType, offerings: Sequence[Offering]
) -> dict[str, Any]:
    """``instance_type`` as the oracle reads one: its labels, capacity, allocatable and its
    offerings (reserved ones, which the catalog never makes available, are left out)."""
    return {
        "name": instance_type.name,
        "labels": dict(instance_type.labels),
        "capacity": _quantities(instance_type.capacity),
        "allocatable": _quantities(instance_type.allocatable),
        "offerings": [
            {
                "zone": o.zone,
                "capacityType": o.capacity_type,
                "price": o.price if o.available else 0.0,
                "available": o.available,
            }
            for o in offerings
            if o.capacity_type != "reserved"
        ],
    }
