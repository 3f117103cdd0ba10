"""``driftwave agent serve`` as the chart's ServiceAccount: the real process, with a kubeconfig
holding that ServiceAccount's TokenRequest token (the identity the chart's pod runs as) and
the chart's own leader-election arguments (``--leader-elect --lease-namespace`` the release's
namespace), against the test control plane and moto's EC2 / SSM / EKS. For each driver it
becomes Ready (informers synced, the Lease taken), applies a wave through its HTTP API (the
EC2NodeClass patched as the ServiceAccount), under the native driver writes the node class's
status, and on SIGTERM releases the Lease; the audit log shows no request of it refused.

No NodePool is created, so the native agent has nothing to provision for pods left pending on
the shared control plane."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agent.kube.real.leader import LEASE_NAME
from agent.kube.real.rest import KubeREST
from tests.integration.deploy.world import DRIVERS, Made, Release, nodeclass, requests_of
from tests.support.awsseed import NEW_RELEASE, OLD_RELEASE, seed_eks_account
from tests.support.controlplane import ControlPlane
from tests.support.kubeobjects import eventually, get
from tests.support.motoserver import moto_server
from tests.support.procs import Processes, processes

REGION = "us-east-1"
TOKEN = "fleet-token"
OLD, NEW = OLD_RELEASE, NEW_RELEASE


@pytest.fixture
def aws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Processes]:
    """moto seeded for the cluster ``prod-1``; the agent's processes pointed at it."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with moto_server() as url:
        seed_eks_account(url, REGION)
        (tmp_path / "token").write_text(TOKEN)
        env = {
            "AWS_ENDPOINT_URL": url,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_REGION": REGION,
            "POD_NAME": "replica-a",  # the leader-election identity, as the chart sets it
        }
        with processes(tmp_path, env) as procs:
            yield procs


def lease(admin: KubeREST, namespace: str) -> dict[str, object]:
    path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{LEASE_NAME}"
    spec: dict[str, object] = admin.request("GET", path)["spec"]
    return spec


@pytest.mark.parametrize("release", DRIVERS, indirect=True)
def test_the_agent_serves_as_the_service_account(
    release: Release,
    aws: Processes,
    controlplane: ControlPlane,
    admin: KubeREST,
    made: Made,
    tmp_path: Path,
) -> None:
    name = f"{release.name}-serve"
    made.create(nodeclass(name))
    since = len(controlplane.audit())
    aws.start(
        "agent", "agent", "serve", "--kubeconfig", str(release.kubeconfig),
        "--cluster-name", "prod-1", "--region", REGION, "--driver", release.driver,
        "--leader-elect", "--lease-namespace", release.namespace,
        "--port", "0", "--token-file", str(tmp_path / "token"),
    )  # fmt: skip
    aws.wait_for(lambda: "listening on" in aws.log("agent"), "the agent to listen", 90)
    found = re.search(r"listening on (\S+)", aws.log("agent"))
    assert found is not None
    base = found.group(1)
    aws.wait_for(
        lambda: httpx.get(f"{base}/readyz", timeout=5).status_code == 200, "Ready (leading)", 60
    )
    assert str(lease(admin, release.namespace)["holderIdentity"]).startswith("replica-a_")

    if release.driver == "native":  # the node class controller resolves and writes its status
        eventually(lambda: bool(get(admin, "ec2nodeclasses", name).get("status")), 60)
    wave = {
        "target": {"amiSelectorTerms": [{"alias": f"al2023@{NEW}"}]},
        "nodeClasses": {"names": [name]},
    }
    headers = {"Authorization": f"Bearer {TOKEN}"}
    created = httpx.put(f"{base}/v1/waves/wave-1", json=wave, headers=headers, timeout=30)
    assert created.status_code == 201, created.text
    stored = get(admin, "ec2nodeclasses", name)
    assert stored["spec"]["amiSelectorTerms"] == [{"alias": f"al2023@{NEW}"}]

    aws.stop()  # SIGTERM: the leader releases its Lease
    assert lease(admin, release.namespace)["holderIdentity"] == ""
    done = requests_of(controlplane, release.user, since)
    assert [r for r in done if r.refused] == [], aws.log("agent")
    writes = {(r.verb, r.resource) for r in done if r.succeeded and r.name == name}
    expected = {("patch", "karpenter.k8s.aws/ec2nodeclasses")}
    if release.driver == "native":
        expected.add(("patch", "karpenter.k8s.aws/ec2nodeclasses/status"))
    assert writes == expected
    lease_writes = {r.verb for r in done if r.succeeded and r.resource.endswith("/leases")}
    assert lease_writes >= {"get", "update"}
