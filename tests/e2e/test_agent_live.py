"""``driftwave agent serve --kubeconfig`` as an operator runs it: a real agent process against a
real control plane of its own (kube-apiserver, controller-manager, kube-scheduler, kwok's
kubelets; tests/support/controlplane.py) and moto's EC2 / SSM / EKS behind the proxy that fills
its gaps (AWS_ENDPOINT_URL; tests/support/eksworld.py). The Nodes of launched instances are
registered as their kubelets would (tests/support/instancenodes.py, on a thread);
kube-scheduler binds the pods and kwok runs them. Pending pods get nodes launched through
CreateFleet, in their launch template's security groups as EC2 launches them, so no node drifts
that did not change; a wave to a newer AL2023 release replaces every node through the agent's
HTTP API, and /readyz, /v1/status and the wave's phase say so."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent.kube.real.rest import KubeREST
from tests.support.awsseed import NEW_RELEASE, OLD_RELEASE
from tests.support.eksworld import (
    AWS_TEST_CREDENTIALS,
    REGION,
    eks_world,
    nodeclass,
    nodepool,
    unbuilt,
)
from tests.support.instancenodes import InstanceNodes
from tests.support.kubeobjects import create, get, items
from tests.support.procs import Processes, processes
from tests.support.required import unavailable

TOKEN = "e2e-agent-token"
OLD, NEW = OLD_RELEASE, NEW_RELEASE
M5_XLARGE_ON_DEMAND = [
    {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.xlarge"]},
    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
]


def seed_cluster(rest: KubeREST) -> None:
    create(rest, nodeclass(OLD))
    create(rest, nodepool(budget="100%", requirements=M5_XLARGE_ON_DEMAND))
    for index in range(3):
        create(rest, {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"web-{index}", "namespace": "default"},
            "spec": {"containers": [{"name": "web", "image": "web:1",
                                     "resources": {"requests": {"cpu": "3", "memory": "1Gi"}}}]},
        })  # fmt: skip


@pytest.fixture
def world(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Processes, KubeREST, dict[str, Any]]]:
    if missing := unbuilt():
        unavailable(f"not built: {', '.join(missing)} (make tools; needs Go)")
    for name, value in AWS_TEST_CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    # a control plane of its own: the agent acts on every NodePool and pod it can see
    with eks_world(tmp_path) as built:
        seed_cluster(built.rest)
        (tmp_path / "token").write_text(TOKEN)
        with processes(tmp_path, built.agent_env()) as procs:
            yield procs, built.rest, {"images": built.images, "stand_in": built.nodes,
                                      "kubeconfig": built.plane.kubeconfig, "ec2": built.ec2,
                                      "dir": tmp_path}  # fmt: skip


def running_images(ec2: Any) -> list[str]:
    found = []
    for reservation in ec2.describe_instances()["Reservations"]:
        for instance in reservation["Instances"]:
            if instance["State"]["Name"] in ("pending", "running"):
                found.append(instance["ImageId"])
    return sorted(found)


def _start_agent(procs: Processes, parts: dict[str, Any], name: str) -> str:
    """Start ``driftwave agent serve`` on the cluster as ``name``; the URL it listens on."""
    procs.start(
        name, "agent", "serve", "--kubeconfig", str(parts["kubeconfig"]),
        "--cluster-name", "prod-1", "--region", REGION, "--no-leader-elect",
        "--port", "0", "--token-file", str(parts["dir"] / "token"),
    )  # fmt: skip
    procs.wait_for(lambda: "listening on" in procs.log(name), "the agent to listen", 60)
    url = re.search(r"listening on (\S+)", procs.log(name))
    assert url is not None
    return url.group(1)


def test_the_agent_provisions_and_rolls_a_wave_on_a_real_cluster(
    world: tuple[Processes, KubeREST, dict[str, Any]],
) -> None:
    procs, rest, parts = world
    stand_in: InstanceNodes = parts["stand_in"]
    base = _start_agent(procs, parts, "agent")
    headers = {"Authorization": f"Bearer {TOKEN}"}
    assert httpx.get(f"{base}/readyz", timeout=5).status_code == 200

    def bound() -> bool:
        pods = list(stand_in.core.list_pod_for_all_namespaces().items)
        return len(pods) == 3 and all(p.spec.node_name for p in pods)

    procs.wait_for(bound, "every pod bound to a launched node", 120)
    first = running_images(parts["ec2"])
    assert len(first) == 3, "one m5.xlarge per 3-cpu pod"
    assert set(first) == {parts["images"][OLD]}
    status = httpx.get(f"{base}/v1/status", headers=headers, timeout=10).json()
    assert status["kubernetesVersion"] == "1.31"
    # launched in their template's groups (as EC2 launches a fleet): nothing drifted
    assert [
        (c["metadata"]["name"], cond.get("reason"))
        for c in items(rest, "nodeclaims")
        for cond in c["status"].get("conditions", [])
        if cond["type"] == "Drifted"
    ] == []

    wave = {"target": {"amiSelectorTerms": [{"alias": f"al2023@{NEW}"}]}}
    created = httpx.put(f"{base}/v1/waves/wave-1", json=wave, headers=headers, timeout=30)
    assert created.status_code == 201, created.text

    def converged() -> bool:
        phase = httpx.get(f"{base}/v1/waves/wave-1", headers=headers, timeout=10).json()["phase"]
        assert phase != "failed"
        return bool(phase == "converged")

    procs.wait_for(converged, "the wave to converge", 300)
    assert set(running_images(parts["ec2"])) == {parts["images"][NEW]}
    claims = items(rest, "nodeclaims")
    assert {c["status"]["imageID"] for c in claims} == {parts["images"][NEW]}
    status = httpx.get(f"{base}/v1/status", headers=headers, timeout=10).json()
    assert status["nodesByImage"] == {parts["images"][NEW]: len(claims)}

    # kill -9 the agent: the wave lives in the cluster (the EC2NodeClass's annotation), so the
    # agent that starts next knows it, observes it, and rolls it back
    procs.kill("agent")
    base = _start_agent(procs, parts, "agent-2")
    procs.wait_for(
        lambda: httpx.get(f"{base}/readyz", timeout=5).status_code == 200, "ready again", 60
    )
    known = httpx.get(f"{base}/v1/waves/wave-1", headers=headers, timeout=30).json()
    assert known["phase"] == "converged", known
    assert known["observed"]["holds"] is True, known["observed"]
    back = httpx.post(f"{base}/v1/waves/wave-1/rollback", headers=headers, timeout=30)
    assert back.status_code == 200, back.text

    def rolled_back() -> bool:
        # the agent has been seen to answer one of these after ~11 s on a loaded machine (a
        # reconcile holding it while the rollback's nodes go); the wait is the test's, not a bound
        # the agent is held to here
        phase = httpx.get(f"{base}/v1/waves/wave-1", headers=headers, timeout=120).json()["phase"]
        assert phase != "rollback-failed"
        return bool(phase == "rolled-back")

    procs.wait_for(rolled_back, "the wave to roll back", 300)
    # the test's pods are bare pods: evicted by the first wave's replacements, they are gone,
    # so the rollback's drift removes the empty nodes rather than replacing them
    assert set(running_images(parts["ec2"])) <= {parts["images"][OLD]}
    classes = items(rest, "ec2nodeclasses")
    assert [c["spec"]["amiSelectorTerms"] for c in classes] == [[{"alias": f"al2023@{OLD}"}]]
    # the agent answers from its last published snapshot: read one taken after the checks above
    since = datetime.now(UTC)
    procs.wait_for(
        lambda: (
            datetime.fromisoformat(
                httpx.get(f"{base}/v1/status", headers=headers, timeout=30).json()["time"]
            )
            > since
        ),
        "a snapshot taken after the cluster was read",
        120,
    )
    done = httpx.get(f"{base}/v1/waves/wave-1", headers=headers, timeout=30).json()
    assert done["observed"]["holds"] is True, done["observed"]


def test_the_karpenter_driver_only_patches_the_node_class(
    world: tuple[Processes, KubeREST, dict[str, Any]],
) -> None:
    procs, rest, parts = world
    procs.start(
        "agent", "agent", "serve", "--kubeconfig", str(parts["kubeconfig"]),
        "--cluster-name", "prod-1", "--region", REGION, "--no-leader-elect",
        "--driver", "karpenter", "--port", "0", "--token-file", str(parts["dir"] / "token"),
    )  # fmt: skip
    procs.wait_for(lambda: "listening on" in procs.log("agent"), "the agent to listen", 60)
    url = re.search(r"listening on (\S+)", procs.log("agent"))
    assert url is not None
    base = url.group(1)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    wave = {"target": {"amiSelectorTerms": [{"alias": f"al2023@{NEW}"}]}}
    created = httpx.put(f"{base}/v1/waves/wave-1", json=wave, headers=headers, timeout=30)
    assert created.status_code == 201, created.text
    nodeclass = get(rest, "ec2nodeclasses", "default")
    assert nodeclass["spec"]["amiSelectorTerms"] == [{"alias": f"al2023@{NEW}"}]
    assert "status" not in nodeclass, "Karpenter owns the node class's status"
    time.sleep(3)  # several loop steps: the pending pods stay Karpenter's to provision
    assert items(rest, "nodeclaims") == []
    assert running_images(parts["ec2"]) == []
