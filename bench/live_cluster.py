"""The live side-by-side benchmark's cluster parts (``bench/live.py``): its workload, the two
node managers it starts, and what one look at the cluster shows.

* The workload is written once and used for both: Deployments of several cpu/memory shapes
  (:data:`SHAPES`), each with a PodDisruptionBudget of ``maxUnavailable: 10%``.
* :func:`running_controller` starts Karpenter's own controller (``tests/support/karpenter.py``)
  or ``driftwave agent serve --kubeconfig …`` with the native driver (as an operator runs it,
  AWS through the world's gap-filling proxy) and yields its process id for ``bench/procstat.py``.
* :func:`look` reads Nodes, NodeClaims, the workload's pods and PDBs once; :class:`Look` answers
  what the benchmark samples (nodes on an image, nodes being disrupted, pods below a PDB's
  minimum, the fleet's hourly price from the agent's own packaged on-demand price list).
"""

from __future__ import annotations

import math
import re
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.catalog.pricing import OnDemandPrices
from agent.kube.real.rest import KubeREST
from tests.support.eksworld import CLUSTER, REGION, EKSWorld, deployment
from tests.support.karpenter import Karpenter
from tests.support.procs import Processes

NAMESPACE = "default"
KARPENTER, DRIFTWAVE = "karpenter", "driftwave"
CONTROLLERS = (KARPENTER, DRIFTWAVE)
DISRUPTED_TAINT = "karpenter.sh/disrupted"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"

SHAPES: tuple[tuple[str, str, str], ...] = (
    ("tiny", "250m", "256Mi"),
    ("small", "500m", "512Mi"),
    ("web", "1", "1Gi"),
    ("cache", "500m", "2Gi"),
    ("api", "2", "2Gi"),
    ("batch", "2", "1Gi"),
    ("memory", "1", "4Gi"),
    ("large", "4", "8Gi"),
)
"""The Deployments' names and each pod's cpu and memory requests."""


def replicas(pods: int) -> dict[str, int]:
    """``pods`` spread over the shapes: the same share each, the remainder to the first ones."""
    share, extra = divmod(pods, len(SHAPES))
    return {name: share + (1 if i < extra else 0) for i, (name, _, _) in enumerate(SHAPES)}


def disruption_budget(name: str, max_unavailable: str = "10%") -> dict[str, Any]:
    """A PodDisruptionBudget over Deployment ``name``'s pods (its ``app`` label)."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"maxUnavailable": max_unavailable, "selector": {"matchLabels": {"app": name}}},
    }


def create_workload(rest: KubeREST, pods: int) -> None:
    """Create the PDBs, then the Deployments (every pod pending until nodes come)."""
    for name, _, _ in SHAPES:
        rest.request(
            "POST",
            f"/apis/policy/v1/namespaces/{NAMESPACE}/poddisruptionbudgets",
            body=disruption_budget(name),
        )
    for name, cpu, memory in SHAPES:
        count = replicas(pods)[name]
        if count:
            body = deployment(name, count, cpu, memory, NAMESPACE)
            rest.request("POST", f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments", body=body)


def scale_workload(rest: KubeREST, wanted: dict[str, int]) -> None:
    """Set each Deployment's replicas (a Deployment with none was never created)."""
    for name, count in wanted.items():
        rest.request(
            "PATCH",
            f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/{name}",
            body={"spec": {"replicas": count}},
            content_type="application/merge-patch+json",
        )


def merge_patch(rest: KubeREST, path: str, body: dict[str, Any]) -> None:
    """A JSON merge patch of the object at ``path``."""
    rest.request("PATCH", path, body=body, content_type="application/merge-patch+json")


@dataclass(frozen=True)
class Look:
    """One read of the cluster (module docstring)."""

    nodes: list[dict[str, Any]]
    claims: list[dict[str, Any]]
    pods: list[dict[str, Any]]
    pdbs: list[dict[str, Any]]

    def running_pods(self) -> int:
        """The workload's pods that are Running and not being deleted."""
        return sum(
            1
            for p in self.pods
            if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
        )

    def node_count(self) -> int:
        """Nodes the cluster has (registered, whatever their state)."""
        return len(self.nodes)

    def hourly(self, prices: OnDemandPrices) -> float:
        """The on-demand price per hour of every Node's instance type, summed (a type the list
        does not price counts nothing; :meth:`unpriced` names them)."""
        return sum(prices.price(self._type(node)) or 0.0 for node in self.nodes)

    def unpriced(self, prices: OnDemandPrices) -> list[str]:
        """The Nodes' instance types the price list has no on-demand price for."""
        return sorted({self._type(n) for n in self.nodes if prices.price(self._type(n)) is None})

    @staticmethod
    def _type(node: dict[str, Any]) -> str:
        return str(node["metadata"].get("labels", {}).get(INSTANCE_TYPE, ""))

    def disrupted(self) -> set[str]:
        """NodeClaims being disrupted: deleting, or their Node has the disruption taint."""
        tainted = {
            n["spec"].get("providerID", "")
            for n in self.nodes
            if any(t["key"] == DISRUPTED_TAINT for t in n["spec"].get("taints") or [])
        }
        found = set()
        for claim in self.claims:
            provider = (claim.get("status") or {}).get("providerID", "")
            if claim["metadata"].get("deletionTimestamp") or (provider and provider in tainted):
                found.add(claim["metadata"]["name"])
        return found

    def allowed(self, percent: int) -> int:
        """What a ``percent``% node budget allows now: of the Nodes the cluster has, rounded up
        (Karpenter's rounding of a percentage budget)."""
        return math.ceil(len(self.nodes) * percent / 100)

    def below_pdb(self) -> int:
        """The most pods any PDB is short of its minimum healthy count right now."""
        short = 0
        for pdb in self.pdbs:
            status = pdb.get("status") or {}
            if "desiredHealthy" in status:
                short = max(short, status["desiredHealthy"] - status.get("currentHealthy", 0))
        return short

    def on_image(self, image: str) -> bool:
        """Every NodeClaim is on ``image``, none is being deleted, each has its Node."""
        if not self.claims:
            return False
        providers = {n["spec"].get("providerID") for n in self.nodes}
        return all(
            (c.get("status") or {}).get("imageID") == image
            and not c["metadata"].get("deletionTimestamp")
            and c["status"].get("providerID") in providers
            for c in self.claims
        ) and len(self.nodes) == len(self.claims)


def look(rest: KubeREST) -> Look:
    """Read the cluster once."""
    nodes = rest.request("GET", "/api/v1/nodes").get("items", [])
    claims = rest.request("GET", "/apis/karpenter.sh/v1/nodeclaims").get("items", [])
    pods = rest.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods").get("items", [])
    pdbs = rest.request("GET", f"/apis/policy/v1/namespaces/{NAMESPACE}/poddisruptionbudgets").get(
        "items", []
    )
    return Look(nodes, claims, pods, pdbs)


@contextmanager
def running_controller(kind: str, world: EKSWorld, folder: Path) -> Iterator[int]:
    """Start ``kind`` (:data:`CONTROLLERS`) on ``world`` and wait until it is ready; yields
    its process id; stops it when the block ends."""
    folder.mkdir(parents=True, exist_ok=True)
    if kind == KARPENTER:
        karpenter = Karpenter(world.plane, world.aws_url)
        try:
            karpenter.start()
            assert karpenter.process is not None
            yield karpenter.process.pid
        finally:
            karpenter.stop()
        return
    token = folder / "token"
    token.write_text(secrets.token_hex(16))
    procs = Processes(folder, world.agent_env())
    try:
        child = procs.start(
            "agent", "agent", "serve", "--kubeconfig", str(world.plane.kubeconfig),
            "--cluster-name", CLUSTER, "--region", REGION, "--no-leader-elect",
            "--driver", "native", "--port", "0", "--token-file", str(token),
        )  # fmt: skip

        def listening() -> bool:
            if child.poll() is not None:
                raise RuntimeError(f"the agent exited: {procs.log('agent')[-2000:]}")
            return re.search(r"listening on \S+", procs.log("agent")) is not None

        procs.wait_for(listening, "the agent to listen", 120)
        yield child.pid
    finally:
        procs.stop()
