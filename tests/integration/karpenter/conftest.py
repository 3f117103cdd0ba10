"""Driver mode end to end: the fleet (PostgreSQL, Redis, a Celery worker, the scheduler) rolls a
release to one cluster whose nodes Karpenter's own controller manages, through ``driftwave agent
serve --driver karpenter`` (:class:`DriverRig`).

The cluster is :func:`tests.support.eksworld.eks_world` (moto behind the gap-filling proxy, a
control plane of its own, Nodes for instances): one EC2NodeClass on the older AL2023 release, one
NodePool of ``m5.xlarge`` with the budget the test asks for, and a Deployment of 3-cpu pods, so
each pod gets a node of its own. Karpenter launches those nodes before the fleet starts; the
Fleet has one ring, ``canary``, with this one cluster.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.integration.fleet.conftest import schema  # noqa: F401  (the fixture, re-used)
from tests.support.awsseed import NEW_RELEASE, OLD_RELEASE
from tests.support.eksworld import (
    AWS_TEST_CREDENTIALS,
    CLUSTER,
    REGION,
    EKSWorld,
    deployment,
    eks_world,
    nodeclass,
    nodepool,
    unbuilt,
)
from tests.support.fleetsim import fleet_manifest
from tests.support.karpenter import Karpenter
from tests.support.kubeobjects import create, items
from tests.support.procs import Processes, processes
from tests.support.required import unavailable

TOKEN = "driver-mode-token"
NODES = 3
"""Nodes (and 3-cpu pods) the cluster starts with."""
M5 = [
    {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.xlarge"]},
    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
]


@dataclass
class DriverRig:
    """One cluster run by Karpenter, its agent in driver mode, and the fleet's processes."""

    world: EKSWorld
    karpenter: Karpenter
    procs: Processes
    folder: Path
    agent_url: str = ""
    agent_starts: int = 0

    @property
    def images(self) -> dict[str, str]:
        """Release → AMI id."""
        return self.world.images

    @property
    def old(self) -> str:
        """The AMI the cluster starts on."""
        return self.world.images[OLD_RELEASE]

    @property
    def new(self) -> str:
        """The AMI the release moves to."""
        return self.world.images[NEW_RELEASE]

    def start_agent(self, port: int = 0) -> str:
        """Start ``driftwave agent serve --driver karpenter`` (again: on the ``port`` the fleet
        knows it at); its URL."""
        self.agent_starts += 1
        name = f"agent-{self.agent_starts}"
        self.procs.start(
            name, "agent", "serve", "--kubeconfig", str(self.world.plane.kubeconfig),
            "--cluster-name", CLUSTER, "--region", REGION, "--no-leader-elect",
            "--driver", "karpenter", "--port", str(port),
            "--token-file", str(self.folder / "token"),
        )  # fmt: skip
        self.procs.wait_for(lambda: "listening on" in self.procs.log(name), "the agent", 90)
        found = re.search(r"listening on (\S+)", self.procs.log(name))
        assert found is not None
        self.agent_url = found.group(1)
        return self.agent_url

    def kill_agent(self) -> None:
        """SIGKILL the agent process."""
        self.procs.kill(f"agent-{self.agent_starts}")

    def agent(self, path: str) -> dict[str, Any]:
        """GET one of the agent's documents."""
        answer = httpx.get(
            f"{self.agent_url}{path}", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60
        )
        answer.raise_for_status()
        document: dict[str, Any] = answer.json()
        return document

    def published_after(self, moment: datetime, timeout: float = 120) -> None:
        """Wait until the agent has published a snapshot taken after ``moment``: it answers
        reads from its last published snapshot, whose ``time`` is when it was taken (on this
        machine's clock)."""
        self.wait_for(
            lambda: datetime.fromisoformat(self.agent("/v1/status")["time"]) > moment,
            "the agent to publish a snapshot taken after the cluster was read",
            timeout,
        )

    def agent_now(self, path: str) -> dict[str, Any]:
        """GET one of the agent's documents from a snapshot taken after this call began (what
        the agent says of the cluster as the test just found it)."""
        self.published_after(datetime.now(UTC))
        return self.agent(path)

    def claims(self) -> list[dict[str, Any]]:
        """Karpenter's NodeClaims now."""
        return items(self.world.rest, "nodeclaims")

    def nodes(self) -> list[Any]:
        """The cluster's Nodes now."""
        return list(self.world.nodes.core.list_node().items)

    def running_pods(self) -> int:
        """Pods Running in ``default``."""
        pods = self.world.nodes.core.list_namespaced_pod("default").items
        return sum(1 for pod in pods if pod.status.phase == "Running")

    def write_release(self, timeout: str = "5m", name: str = "release.yaml") -> Path:
        """A Release of the newer AL2023 release to the canary ring (a soak of 15 s: the pods
        the last replacement evicted are bound and running again before the gate reads the
        cluster, however busy the machine)."""
        release = {
            "apiVersion": "driftwave.io/v1alpha1",
            "kind": "Release",
            "metadata": {"name": f"al2023-{NEW_RELEASE}"},
            "spec": {
                "fleet": "kp",
                "target": {"amiSelectorTerms": [{"alias": f"al2023@{NEW_RELEASE}"}]},
                "strategy": {
                    "rings": [
                        {"name": "canary", "soak": "15s", "gates": {"convergenceTimeout": timeout}}
                    ]
                },
            },
        }
        path = self.folder / name
        path.write_text(yaml.safe_dump(release))
        return path

    def start_rollout(self, release: Path) -> str:
        """``fleet apply`` and ``rollout start``; the rollout's id."""
        fleet = fleet_manifest(
            {"canary": [CLUSTER]},
            "kp",
            endpoint=lambda _: self.agent_url,
            credentials=lambda _: f"file:{self.folder / 'token'}",
        )
        (self.folder / "fleet.yaml").write_text(yaml.safe_dump(fleet))
        applied = self.procs.run("fleet", "apply", "fleet.yaml")
        assert applied.returncode == 0, applied.stderr
        rid: str = self.procs.json("rollout", "start", str(release))["id"]
        return rid

    def status(self, rid: str) -> dict[str, Any]:
        """``driftwave rollout status``."""
        found: dict[str, Any] = self.procs.json("rollout", "status", rid)
        return found

    def audit(self, rid: str) -> list[dict[str, Any]]:
        """``driftwave rollout audit``."""
        rows: list[dict[str, Any]] = self.procs.json("rollout", "audit", rid)
        return rows

    def wait_for(self, done: Callable[[], bool], what: str, timeout: float) -> None:
        """Poll ``done`` until true (fails with the processes' logs after ``timeout`` s)."""
        self.procs.wait_for(done, what, timeout)

    def settled(self) -> bool:
        """The cluster as the tests start it: :data:`NODES` NodeClaims, each initialized, none
        drifted or being deleted, one instance each, and every pod Running."""
        claims = self.claims()
        return (
            len(claims) == NODES
            and all(
                condition_true(c, "Initialized") and not condition_true(c, "Drifted")
                for c in claims
            )
            and not any(c["metadata"].get("deletionTimestamp") for c in claims)
            and len(self.world.running_images()) == NODES
            and self.running_pods() == NODES
        )


def condition_true(claim: dict[str, Any], kind: str) -> bool:
    """Whether a NodeClaim (as the API server returns it) has condition ``kind`` True."""
    conditions = (claim.get("status") or {}).get("conditions") or []
    return any(c["type"] == kind and c["status"] == "True" for c in conditions)


def cluster_images(rig: DriverRig) -> dict[str, list[str]]:
    """What runs on the cluster: every running instance's image and every NodeClaim's."""
    return {
        "instances": rig.world.running_images(),
        "claims": sorted((c.get("status") or {}).get("imageID", "") for c in rig.claims()),
    }


@pytest.fixture
def budget() -> str:
    """The NodePool's disruption budget (``nodes``); a test overrides it."""
    return "100%"


@pytest.fixture
def consolidate_after() -> str:
    """The NodePool's ``consolidateAfter``; a test overrides it."""
    return "Never"


@pytest.fixture
def rig(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    database_url: str,
    redis_url: str,
    schema: str,  # noqa: F811
    budget: str,
    consolidate_after: str,
) -> Iterator[DriverRig]:
    if missing := unbuilt():
        unavailable(f"not built: {', '.join(missing)} (make tools; needs Go)")
    for key, value in AWS_TEST_CREDENTIALS.items():
        monkeypatch.setenv(key, value)
    (tmp_path / "token").write_text(TOKEN + "\n")
    with eks_world(tmp_path / "cluster") as world:
        create(world.rest, nodeclass())
        create(
            world.rest,
            nodepool(budget=budget, consolidate_after=consolidate_after, requirements=M5),
        )
        create(world.rest, deployment("web", NODES, "3", "1Gi"))
        karpenter = Karpenter(world.plane, world.aws_url)
        env = {
            **world.agent_env(),
            "DRIFTWAVE_DATABASE_URL": database_url,
            "DRIFTWAVE_EMBEDDED_WRITES": "allow",  # the CLI on the fleet's database (embedded)
            "DRIFTWAVE_DATABASE_SCHEMA_NAME": schema,
            "DRIFTWAVE_BROKER_URL": redis_url,
            "DRIFTWAVE_BROKER_QUEUE": f"kp-{uuid.uuid4().hex[:8]}",
            "DRIFTWAVE_STEP_POLL_INTERVAL": "1",
            "DRIFTWAVE_SCHEDULER_INTERVAL": "0.5",
        }
        try:
            karpenter.start()
            with processes(tmp_path, env) as procs:
                built = DriverRig(world, karpenter, procs, tmp_path)
                built.wait_for(built.settled, "Karpenter's nodes to run the pods", 240)
                built.start_agent()
                procs.start("worker", "worker", "--concurrency", "2")
                procs.start("scheduler", "scheduler")
                yield built
        finally:
            karpenter.stop()
