"""Taking a cluster over, both ways, with Karpenter's own controller (v1.14.1) and the native agent
as real processes on one EKS world (tests/support/eksworld.py: a control plane of its own with
Karpenter's CRDs, moto behind the proxy that fills its gaps, Nodes for instances on a thread).

* **Karpenter → agent**: Karpenter provisions pods of three shapes over two NodePools of different
  settings and checks them for drift; it is stopped and ``driftwave agent serve`` (native driver)
  started. For long enough that its drift checks (at start, and after it resolves the node
  class's status again) and several disruption passes run, no NodeClaim is marked ``Drifted``,
  no instance is launched or terminated and its status shows every node: its hashes and takeover
  rules agree with what Karpenter stamped. A wave to the newer release through its API then
  replaces Karpenter's nodes (the positive control: its drift checks do run).
* **agent → Karpenter**: the agent provisions the same workload and is stopped; Karpenter started
  marks nothing ``Drifted``, logs no disruption, garbage-collects no instance and launches none
  over its first drift checks and disruption polls.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.support.awsseed import NEW_RELEASE, OLD_RELEASE
from tests.support.eksworld import (
    AWS_TEST_CREDENTIALS,
    REGION,
    EKSWorld,
    deployment,
    eks_world,
    nodeclass,
    nodepool,
    unbuilt,
)
from tests.support.karpenter import Karpenter, running_karpenter
from tests.support.kubeobjects import create, items
from tests.support.procs import DRIFTWAVE, Processes, processes
from tests.support.required import unavailable

pytestmark = pytest.mark.integration

TOKEN = "takeover-token"
HEADERS = {"Authorization": f"Bearer {TOKEN}"}
PODS = 12 + 4 + 3
WATCH = 60.0
"""Seconds the new owner is watched: its drift checks at start and after its first node class
refresh, and at least five disruption polls (10 s apart, for both)."""


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[EKSWorld]:
    if missing := unbuilt():
        unavailable(f"not built: {', '.join(missing)} (make tools; needs Go)")
    for name, value in AWS_TEST_CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    with eks_world(tmp_path) as built:
        (tmp_path / "token").write_text(TOKEN)
        yield built


def seed(world: EKSWorld) -> None:
    """One node class; a general NodePool (c/m/r, 10% budget, no consolidation) and a memory one
    (r only, labelled and tainted, one node at a time, empty nodes consolidated); web and batch
    pods for the first, cache pods that select and tolerate the second."""
    create(world.rest, nodeclass(OLD_RELEASE))
    create(world.rest, nodepool("general"))
    memory = nodepool(
        "memory",
        budget="1",
        consolidate_after="30s",
        requirements=[
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
            {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["r"]},
        ],
    )
    memory["spec"]["disruption"]["consolidationPolicy"] = "WhenEmpty"
    template = memory["spec"]["template"]
    template["metadata"] = {"labels": {"workload": "memory"}}
    template["spec"]["taints"] = [{"key": "dedicated", "value": "memory", "effect": "NoSchedule"}]
    create(world.rest, memory)
    create(world.rest, deployment("web", 12, "500m", "512Mi"))
    create(world.rest, deployment("batch", 4, "2", "4Gi"))
    cache = deployment("cache", 3, "1", "6Gi")
    pod_spec = cache["spec"]["template"]["spec"]
    pod_spec["nodeSelector"] = {"workload": "memory"}
    pod_spec["tolerations"] = [
        {"key": "dedicated", "operator": "Equal", "value": "memory", "effect": "NoSchedule"}
    ]
    create(world.rest, cache)


def running_pods(world: EKSWorld) -> int:
    pods = world.nodes.core.list_namespaced_pod("default").items
    return sum(1 for pod in pods if pod.status.phase == "Running")


def live_instances(world: EKSWorld) -> dict[str, str]:
    """Instance id → image of every pending or running instance."""
    found = {}
    for page in world.ec2.get_paginator("describe_instances").paginate():
        for reservation in page["Reservations"]:
            for instance in reservation["Instances"]:
                if instance["State"]["Name"] in ("pending", "running"):
                    found[instance["InstanceId"]] = instance["ImageId"]
    return found


def claims(world: EKSWorld) -> dict[str, dict[str, Any]]:
    """NodeClaim name → the NodeClaim."""
    return {c["metadata"]["name"]: c for c in items(world.rest, "nodeclaims")}


def drifted(world: EKSWorld) -> list[tuple[str, str]]:
    """(NodeClaim, reason) of every NodeClaim with a Drifted condition."""
    return [
        (name, str(cond.get("reason")))
        for name, claim in claims(world).items()
        for cond in (claim.get("status") or {}).get("conditions", [])
        if cond["type"] == "Drifted"
    ]


def describe(world: EKSWorld, base: str | None = None) -> str:
    """The cluster as a failed wait leaves it: pods by phase, NodeClaims with their conditions,
    instances, and the agent's last events (when it runs)."""
    pods = world.nodes.core.list_namespaced_pod("default").items
    lines = [f"pod {p.metadata.name}: {p.status.phase} on {p.spec.node_name}" for p in pods]
    for name, claim in claims(world).items():
        conditions = (claim.get("status") or {}).get("conditions", [])
        lines.append(
            f"nodeclaim {name}: "
            + ", ".join(f"{c['type']}={c['status']}({c.get('reason', '')})" for c in conditions)
        )
    lines.append(f"instances: {live_instances(world)}")
    if base is not None:
        try:
            answer = httpx.get(f"{base}/v1/events?limit=40", headers=HEADERS, timeout=30)
            lines.append(f"agent events: {answer.text}")
        except httpx.HTTPError as exc:
            lines.append(f"agent events: {exc}")
    return "\n".join(lines)


def wait_until(
    check: Callable[[], bool], what: str, timeout: float, world: EKSWorld, base: str | None = None
) -> None:
    """Poll ``check`` every second; fail with :func:`describe` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"waited {timeout:.0f}s for {what}\n{describe(world, base)}")
        time.sleep(1)


def hash_check(world: EKSWorld) -> list[str]:
    """``driftwave agent hash - --kubeconfig`` on the NodePools and EC2NodeClasses as they are in
    the cluster (``kubectl get nodepools,ec2nodeclasses -o yaml``): each stamped object's verdict
    (``agrees``, ``differs``, ``other version``); unstamped ones are left out."""
    objects = [*items(world.rest, "nodepools"), *items(world.rest, "ec2nodeclasses")]
    listed = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects})
    done = subprocess.run(
        [str(DRIFTWAVE), "agent", "hash", "-", "--kubeconfig", str(world.plane.kubeconfig)],
        input=listed, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("<stdin>")]
    verdicts = [row.split("  ")[-1].strip() for row in rows]
    return [v for v in verdicts if v != "unstamped"]


def start_agent(procs: Processes, world: EKSWorld, name: str = "agent") -> str:
    """``driftwave agent serve`` (native driver) on the world's cluster; the URL it serves."""
    procs.start(
        name, "agent", "serve", "--kubeconfig", str(world.plane.kubeconfig),
        "--cluster-name", "prod-1", "--region", REGION, "--no-leader-elect",
        "--port", "0", "--token-file", str(world.folder / "token"),
    )  # fmt: skip
    procs.wait_for(lambda: "listening on" in procs.log(name), "the agent to listen", 90)
    url = re.search(r"listening on (\S+)", procs.log(name))
    assert url is not None
    base = url.group(1)
    procs.wait_for(lambda: _ready(base), "the agent to be ready", 90)
    return base


def stop_agent(procs: Processes, name: str = "agent") -> None:
    """SIGTERM, as a Deployment scaled to zero stops its pod; wait for it to exit."""
    child = procs.children.pop(name)
    os.killpg(child.pid, signal.SIGTERM)
    assert child.wait(30) == 0, procs.log(name)[-2000:]


def _ready(base: str) -> bool:
    try:
        return httpx.get(f"{base}/readyz", timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


def status(base: str) -> dict[str, Any]:
    answer = httpx.get(f"{base}/v1/status", headers=HEADERS, timeout=30)
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


def metric(base: str, name: str) -> float:
    """The sum of a metric's samples on the agent's /metrics (0 when it has none)."""
    text = httpx.get(f"{base}/metrics", timeout=10).text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith((f"{name} ", f"{name}{{"))
    )


def karpenter_checked(karpenter: Karpenter, claimed: int) -> bool:
    """Karpenter's drift checks (its ``nodeclaim.disruption`` controller, one reconcile per
    NodeClaim, again every 5 minutes) have looked at every NodeClaim at least once."""
    return karpenter.reconciles("nodeclaim.disruption") >= claimed


def assert_registered_as_karpenter_does(world: EKSWorld, launched: dict[str, Any]) -> None:
    """What Karpenter's own NodeClaims and Nodes carry: each NodeClaim labelled with its region,
    zone id and tenancy and owned by its NodePool, each Node owned by its NodeClaim, with its
    NodeClaim's taints and hash annotations (the stand-in kubelets
    register without the template's taints, so the sync is the node manager's)."""
    pools = {p["metadata"]["name"]: p["metadata"]["uid"] for p in items(world.rest, "nodepools")}
    nodes = {n.metadata.name: n for n in world.nodes.core.list_node().items}
    zone_ids = {s["zone"]: s["zoneID"] for c in items(world.rest, "ec2nodeclasses")
                for s in c["status"]["subnets"]}  # fmt: skip
    for name, claim in launched.items():
        labels = claim["metadata"]["labels"]
        assert labels["topology.kubernetes.io/region"] == REGION, name
        assert labels["topology.k8s.aws/zone-id"] == zone_ids[labels["topology.kubernetes.io/zone"]]
        assert labels["karpenter.k8s.aws/instance-tenancy"] == "default"
        pool = claim["metadata"]["labels"]["karpenter.sh/nodepool"]
        owners = [(o["kind"], o["uid"]) for o in claim["metadata"].get("ownerReferences", [])]
        assert owners == [("NodePool", pools[pool])], name
        node = nodes[claim["status"]["nodeName"]]
        assert [(o.kind, o.uid) for o in node.metadata.owner_references or []] == [
            ("NodeClaim", claim["metadata"]["uid"])
        ]
        taints = {(t.key, t.effect) for t in node.spec.taints or []}
        wanted = {(t["key"], t["effect"]) for t in claim["spec"].get("taints", [])}
        assert wanted <= taints, (name, taints)
        assert "karpenter.sh/unregistered" not in {key for key, _ in taints}
        hashes = {k: v for k, v in claim["metadata"]["annotations"].items() if "hash" in k}
        assert len(hashes) == 4
        assert hashes.items() <= node.metadata.annotations.items()


def test_the_agent_takes_over_nodes_karpenter_launched_and_drifts_none(
    world: EKSWorld,
) -> None:
    seed(world)
    with running_karpenter(world.plane, world.aws_url) as karpenter:
        wait_until(lambda: running_pods(world) == PODS, f"{PODS} pods Running", 300, world)
        launched = claims(world)
        wait_until(
            lambda: karpenter_checked(karpenter, len(launched)),
            "Karpenter's drift checks",
            120,
            world,
        )
        assert drifted(world) == []
        wait_until(lambda: len(hash_check(world)) == 3, "Karpenter's stamps", 60, world)
        # the runbook's first step: driftwave computes the hashes Karpenter stamped
        assert hash_check(world) == ["agrees"] * 3
    assert_registered_as_karpenter_does(world, launched)
    # Karpenter stopped (its Deployment scaled to zero)
    pools = {c["metadata"]["labels"]["karpenter.sh/nodepool"] for c in launched.values()}
    assert pools == {"general", "memory"}, "both NodePools have nodes"
    before = live_instances(world)
    assert set(before.values()) == {world.images[OLD_RELEASE]}
    assert len(before) == len(launched)

    with processes(world.folder, world.agent_env()) as procs:
        base = start_agent(procs, world)
        began = time.monotonic()
        while time.monotonic() - began < WATCH:
            assert drifted(world) == [], procs.log("agent")[-3000:]
            assert live_instances(world) == before
            time.sleep(5)
        assert set(claims(world)) == set(launched)
        assert running_pods(world) == PODS
        seen = status(base)
        assert seen["nodesByImage"] == {world.images[OLD_RELEASE]: len(launched)}, seen
        for name in (
            "karpenter_nodeclaims_created_total",
            "karpenter_nodeclaims_disrupted_total",
            "karpenter_nodeclaims_terminated_total",
        ):
            assert metric(base, name) == 0, name
        answer = httpx.get(f"{base}/v1/events?limit=5000", headers=HEADERS, timeout=30)
        did = {e["type"] for e in answer.json()["events"]}
        acted = {"Drifted", "CreatedNodeClaim", "Launched", "DisruptionStarted", "Disrupted",
                 "Expired", "Evicted", "DeletedNodeClaim", "Terminated"}  # fmt: skip
        assert not did & acted, did

        # a real change: the agent carries a wave to the new release out on Karpenter's nodes
        wave = {"target": {"amiSelectorTerms": [{"alias": f"al2023@{NEW_RELEASE}"}]}}
        created = httpx.put(f"{base}/v1/waves/wave-1", json=wave, headers=HEADERS, timeout=60)
        assert created.status_code == 201, created.text

        def converged() -> bool:
            answer = httpx.get(f"{base}/v1/waves/wave-1", headers=HEADERS, timeout=60).json()
            assert answer["phase"] != "failed", answer
            return bool(answer["phase"] == "converged")

        wait_until(converged, "the wave to converge", 420, world, base)
        after = live_instances(world)
        assert set(after.values()) == {world.images[NEW_RELEASE]}
        assert not set(after) & set(before), "every node Karpenter launched was replaced"
        assert not set(claims(world)) & set(launched)
        answer = httpx.get(f"{base}/v1/events?limit=5000", headers=HEADERS, timeout=30)
        # the same report that showed nothing done before the wave shows the wave's work
        assert {"Drifted", "CreatedNodeClaim", "Launched"} <= {
            e["type"] for e in answer.json()["events"]
        }
        wait_until(lambda: running_pods(world) == PODS, f"{PODS} pods Running again", 120, world)


def test_karpenter_takes_over_nodes_the_agent_launched_and_drifts_none(
    world: EKSWorld,
) -> None:
    seed(world)
    with processes(world.folder, world.agent_env()) as procs:
        base = start_agent(procs, world)
        wait_until(lambda: running_pods(world) == PODS, f"{PODS} pods Running", 300, world, base)
        time.sleep(15)  # the agent's drift check after its launches
        assert drifted(world) == []
        assert status(base)["nodesByImage"] == {world.images[OLD_RELEASE]: len(claims(world))}
        stop_agent(procs)
    launched = claims(world)
    assert_registered_as_karpenter_does(world, launched)
    pools = {c["metadata"]["labels"]["karpenter.sh/nodepool"] for c in launched.values()}
    assert pools == {"general", "memory"}, "both NodePools have nodes"
    before = live_instances(world)
    assert len(before) == len(launched)

    with running_karpenter(world.plane, world.aws_url) as karpenter:
        wait_until(
            lambda: karpenter_checked(karpenter, len(launched)),
            "Karpenter's drift checks",
            120,
            world,
        )
        began = time.monotonic()
        while time.monotonic() - began < WATCH:
            assert drifted(world) == [], karpenter.tail()
            assert live_instances(world) == before, karpenter.tail()
            time.sleep(5)
        assert set(claims(world)) == set(launched)
        assert karpenter.messages("disrupting") == []
        assert karpenter.messages("garbage collected") == []
        assert karpenter.messages("launched nodeclaim") == []
        assert running_pods(world) == PODS
