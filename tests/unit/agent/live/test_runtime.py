"""The live agent's runtime and loop over our own fakes of the ports: the in-memory cluster
with queued watch delivery (as the Kubernetes adapter delivers), the simulated cloud and
kubelet, a virtual clock, and a control plane of our own. The real adapters are tested against
the loopback API server and moto elsewhere; here the runtime's own logic is: events reach the
controllers only on the loop's step, node class status is written when it changes, the native
driver provisions and replaces drifted nodes for a wave, and the Karpenter driver never
launches or disrupts."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from agent.api.conditions import is_true
from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.kube import Pod
from agent.live.loop import UNHEALTHY_AFTER, AgentLoop
from agent.live.runtime import Recorder
from agent.service import AgentService
from tests.support.livesim import NEW, Harness


def test_events_reach_the_controllers_only_on_the_loops_step() -> None:
    harness = Harness()
    harness.seed(pods=4)
    assert harness.cluster.queue, "the seeded objects wait in the queue"
    assert harness.agent.controllers.provisioner.pending_reasons == {}
    harness.clock.advance(timedelta(seconds=30))
    assert harness.claims() == [], "no controller acted before a step"
    harness.agent.step()
    assert not harness.cluster.queue, "a step delivers every queued event"


def test_the_native_driver_provisions_and_writes_node_class_status() -> None:
    harness = Harness()
    harness.seed(pods=4)
    harness.run(240)
    nodeclass = harness.inner.get(EC2NodeClass, "default")
    assert nodeclass.status is not None
    assert nodeclass.status.amis, "the node class status carries the resolved images"
    claims = harness.claims()
    assert len(claims) == 2, "two 8-vCPU nodes hold four 3-CPU pods"
    assert all(is_true(c, "Initialized") for c in claims)
    pods = harness.inner.list(Pod)
    assert all(p.spec.node_name for p in pods)
    written = nodeclass.metadata.resource_version
    calls = harness.status_calls
    harness.run(180)
    assert harness.status_calls > calls, "status is resolved again every minute"
    again = harness.inner.get(EC2NodeClass, "default")
    assert again.metadata.resource_version == written, "an unchanged status is not written"
    assert harness.agent.cost_per_hour() > 0


def test_a_wave_through_the_service_replaces_every_node_on_the_native_driver() -> None:
    harness = Harness()
    harness.seed(pods=4)
    harness.run(240)
    old_images = {c.status.image_id for c in harness.claims()}
    service = AgentService(harness.agent, name="live")
    created, wave = service.apply_wave(
        "w1", {"target": {"amiSelectorTerms": [{"alias": f"al2023@{NEW}"}]}}
    )
    assert created
    assert wave.phase in {"progressing", "converged"}
    for _ in range(120):
        harness.run(15)
        if service.wave("w1").phase == "converged":
            break
    document = service.wave("w1")
    assert document.phase == "converged", document
    images = {c.status.image_id for c in harness.claims() if not c.metadata.deletion_timestamp}
    assert images.isdisjoint(old_images)
    assert set(document.target_images) >= images
    assert all(p.spec.node_name for p in harness.inner.list(Pod)), "no pod left pending"
    assert any(e.type == "NodeClassPatched" for e in harness.agent.events)


def test_the_karpenter_driver_never_launches_and_patches_only_the_node_class() -> None:
    harness = Harness(driver="karpenter")
    harness.seed(pods=4)
    harness.run(300)
    assert harness.claims() == [], "Karpenter provisions, not the agent"
    assert harness.inner.get(EC2NodeClass, "default").status is None, "Karpenter owns status"
    service = AgentService(harness.agent, name="karpenter-cluster")
    created, wave = service.apply_wave(
        "w1", {"target": {"amiSelectorTerms": [{"alias": f"al2023@{NEW}"}]}}
    )
    assert created
    assert wave.target_images, "the target resolves through the runtime's image resolver"
    terms = harness.inner.get(EC2NodeClass, "default").spec.ami_selector_terms
    assert [t.alias for t in terms] == [f"al2023@{NEW}"]
    harness.run(120)
    assert harness.claims() == []
    assert service.status().nodes == 0


def test_a_kubernetes_version_wave_asks_the_control_plane() -> None:
    harness = Harness()
    harness.seed(pods=2)
    harness.run(200)
    service = AgentService(harness.agent, name="live")
    service.apply_wave("k1", {"target": {"kubernetesVersion": "1.31"}})
    assert harness.control_plane.asked == ["1.31"]
    assert any(e.type == "KubernetesUpgradeStarted" for e in harness.agent.events)


def test_each_step_moves_the_waves_then_publishes_under_the_lock_and_is_timed() -> None:
    harness = Harness()
    lock = threading.RLock()
    calls: list[tuple[str, bool]] = []

    def held() -> bool:
        """Whether another thread finds the lock taken."""
        free: list[bool] = []

        def probe() -> None:
            free.append(lock.acquire(blocking=False))
            if free[0]:
                lock.release()

        thread = threading.Thread(target=probe)
        thread.start()
        thread.join()
        return not free[0]

    timed: list[float] = []
    loop = AgentLoop(
        harness.agent,
        lock=lock,
        on_step=lambda: calls.append(("step", held())),
        publish=lambda: calls.append(("publish", held())),
        timed=timed.append,
    )
    assert loop.step_once() is True
    assert calls == [("step", True), ("publish", True)]
    assert len(timed) == 1, "one step, one duration (the waves and the publish included)"
    assert timed[0] > 0


def test_the_loop_steps_only_while_leading_and_survives_failing_steps() -> None:
    harness = Harness()
    leading = threading.Event()
    loop = AgentLoop(harness.agent, lock=threading.RLock(), leading=leading.is_set, tick=0.01)
    assert loop.step_once() is False
    leading.set()
    assert loop.step_once() is True

    def broken() -> int:
        raise RuntimeError("API server gone")

    harness.agent.step = broken  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        loop.step_once()
    loop.start()
    try:
        for _ in range(500):
            if loop.failures >= 3:
                break
            threading.Event().wait(0.01)
    finally:
        loop.stop()
    assert loop.failures >= 3
    assert isinstance(loop.last_error, RuntimeError)
    assert loop.healthy() is (loop.failures < UNHEALTHY_AFTER)


def test_a_deleted_node_class_is_cleaned_up_once() -> None:
    harness = Harness()
    harness.seed(pods=0)
    harness.run(30)
    assert harness.forgotten == []
    harness.inner.delete(EC2NodeClass, "default")
    harness.run(10)
    assert harness.forgotten == ["default"], "its launch templates are deleted (on AWS)"
    assert any(e.object == "ec2nodeclass/default" for e in harness.agent.events)
    harness.run(60)
    assert harness.forgotten == ["default"]


class _Queue:
    """An interruption queue holding one message: a spot interruption of ``general-x7k2p``."""

    def __init__(self, record: Recorder) -> None:
        self.record = record
        self.waiting = 1

    def poll_once(self) -> int:
        handled, self.waiting = self.waiting, 0
        if handled:
            self.record("NodeClaim", "general-x7k2p", "Interrupted", {"kind": "spot"})
        return handled


def test_the_interruption_consumer_is_built_around_the_agents_recorder() -> None:
    built: list[_Queue] = []

    def factory(record: Recorder) -> _Queue:
        built.append(_Queue(record))
        return built[-1]

    harness = Harness(interruption=factory)
    assert len(built) == 1  # built once, with the agent
    harness.agent.step()
    assert built[0].waiting == 0
    assert [(e.type, e.object, e.reason) for e in harness.agent.events] == [
        ("NodeClaim", "general-x7k2p", "Interrupted")
    ]
