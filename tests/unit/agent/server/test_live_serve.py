"""``serve_live``: the live agent served over HTTP (a real uvicorn server on loopback), built by a
builder of our own over the fakes of tests/support/livesim.py, and over HTTPS with mutual TLS;
plain HTTP off loopback refused before the agent is built; and the live options' checks."""

from __future__ import annotations

import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from agent.live.options import LiveOptions, check_live_options
from agent.live.runtime import LiveAgent
from agent.server.live import serve_live
from agent.server.serve import ServeError, ServeOptions, serve_real
from agent.server.tls import ReloadingTLS, TLSFiles, listen_problem
from common.auth import hash_token
from tests.support.livesim import Harness
from tests.support.tlsca import TestCA


class Parts:
    """The builder's product, with leadership and sync under the test's control."""

    def __init__(self, harness: Harness) -> None:
        self.harness = harness
        self.lead = threading.Event()
        self.started = False
        self.closed = False

    @property
    def agent(self) -> LiveAgent:
        return self.harness.agent

    def start(self) -> None:
        self.started = True

    def leading(self) -> bool:
        return self.lead.is_set()

    def synced(self) -> bool:
        return self.started

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def served() -> Iterator[tuple[str, Parts]]:
    harness = Harness()
    harness.seed(pods=2)
    parts = Parts(harness)
    lines: list[str] = []
    stop = threading.Event()
    options = LiveOptions(cluster_name="prod-1", port=0, tick=0.01)
    thread = threading.Thread(
        target=serve_live,
        args=(options, lambda _: parts),
        kwargs={"token_hashes": {hash_token("s3cret")}, "say": lines.append, "stop": stop},
    )
    thread.start()
    for _ in range(500):
        if lines:
            break
        threading.Event().wait(0.01)
    assert lines, "the agent announced where it listens"
    url = lines[0].split(" listening on ")[1].split(" ")[0]
    try:
        yield url, parts
    finally:
        stop.set()
        thread.join(10)
    assert parts.closed, "the parts are closed on the way out"


def test_a_standby_replica_is_alive_but_not_ready(served: tuple[str, Parts]) -> None:
    url, parts = served
    assert parts.started
    assert httpx.get(f"{url}/healthz", timeout=10).status_code == 200
    assert httpx.get(f"{url}/readyz", timeout=10).status_code == 503
    threading.Event().wait(0.2)  # twenty ticks of the loop
    assert len(parts.harness.cluster.queue) > 0, "a standby replica delivers no event"
    assert steps_counted(url) == 0, "a standby replica takes no step"


def test_the_leader_is_ready_acts_and_answers_the_api(served: tuple[str, Parts]) -> None:
    url, parts = served
    parts.lead.set()
    for _ in range(500):
        if httpx.get(f"{url}/readyz", timeout=10).status_code == 200:
            break
        threading.Event().wait(0.01)
    assert httpx.get(f"{url}/readyz", timeout=10).status_code == 200
    assert httpx.get(f"{url}/v1/status", timeout=10).status_code == 401
    status = httpx.get(
        f"{url}/v1/status", headers={"Authorization": "Bearer s3cret"}, timeout=10
    ).json()
    assert status["cluster"] == "prod-1"
    assert status["kubernetesVersion"] == "1.30"
    assert len(parts.harness.cluster.queue) == 0, "the leader's loop delivered every event"
    assert steps_counted(url) > 0, "the leader's steps are timed in its metrics"


def steps_counted(url: str) -> float:
    """The loop steps the agent's ``driftwave_agent_loop_step_seconds`` histogram counted."""
    text = httpx.get(f"{url}/metrics", timeout=10).text
    found = [
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "driftwave_agent_loop_step_seconds_count"
    ]
    assert len(found) == 1, "the histogram is exposed"
    return found[0]


def test_live_options_name_each_problem(tmp_path: Path) -> None:
    assert check_live_options(LiveOptions(cluster_name="prod-1")) == []
    problems = check_live_options(
        LiveOptions(
            cluster_name="-bad name",
            kubeconfig=tmp_path / "missing",
            in_cluster=True,
            driver="karpenter",
            interruption_queue="q",
            port=70000,
        )
    )
    assert [p.split(":")[0] for p in problems] == [
        "--kubeconfig and --in-cluster",
        "--kubeconfig",
        "--cluster-name",
        "--interruption-queue",
        "--port",
    ]
    assert check_live_options(LiveOptions(cluster_name="a", context="prod")) == [
        "--context: only with --kubeconfig"
    ]
    (bundle,) = check_live_options(LiveOptions(cluster_name="a", cluster_ca_bundle="x y"))
    assert bundle.startswith("--cluster-ca-bundle: is not base64")
    assert check_live_options(LiveOptions(cluster_name="a", cluster_ca_bundle="Q0E=")) == []


def test_a_live_agent_off_loopback_without_tls_is_refused_before_it_is_built() -> None:
    built: list[LiveOptions] = []

    def build(options: LiveOptions) -> Parts:
        built.append(options)
        raise AssertionError("not built")

    live = LiveOptions(cluster_name="prod-1", host="0.0.0.0", port=0)
    with pytest.raises(ServeError) as refused:
        serve_real(ServeOptions(token="s3cret", live=live), live, lambda _: None, build=build)
    assert refused.value.problems == [listen_problem("0.0.0.0", None)]
    assert built == []


def test_a_live_agent_serves_https_and_requires_client_certificates(tmp_path: Path) -> None:
    ca = TestCA(tmp_path)
    served, client = ca.issue("agent"), ca.issue("fleet", client=True)
    harness = Harness()
    parts = Parts(harness)
    parts.lead.set()
    lines: list[str] = []
    stop = threading.Event()
    tls = ReloadingTLS(TLSFiles(served.cert, served.key, ca.ca_file))
    thread = threading.Thread(
        target=serve_live,
        args=(LiveOptions(cluster_name="prod-1", port=0, tick=0.01), lambda _: parts),
        kwargs={"token_hashes": {hash_token("s3cret")}, "say": lines.append, "stop": stop,
                "tls": tls},
    )  # fmt: skip
    thread.start()
    try:
        for _ in range(500):
            if lines:
                break
            threading.Event().wait(0.01)
        url = lines[0].split(" listening on ")[1].split(" ")[0]
        assert url.startswith("https://127.0.0.1:")
        auth = {"Authorization": "Bearer s3cret"}
        context = ssl.create_default_context(cafile=ca.ca_file)
        with httpx.Client(verify=context, timeout=10) as anonymous:
            assert anonymous.get(f"{url}/healthz").status_code == 200
            refused = anonymous.get(f"{url}/v1/status", headers=auth)
            assert refused.json()["error"]["code"] == "client_certificate_required"
        context.load_cert_chain(client.cert, client.key)
        with httpx.Client(verify=context, timeout=10) as fleet:
            assert fleet.get(f"{url}/v1/status", headers=auth).status_code == 200
    finally:
        stop.set()
        thread.join(10)
