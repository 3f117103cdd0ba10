"""Reads from the published snapshot: no wait behind a step, read-your-writes, fresh when idle."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta

from agent.service.snapshot import RECENT
from agent.sim.realtime import RealTimeSimulation
from tests.unit.agent.service.helpers import NEWEST, Rig, alias, rig, wire


def publishing(nodes: int = 10) -> Rig:
    """A rig whose simulation publishes after each step, as the served agents' loops do."""
    r = rig(nodes=nodes)
    r.sim = RealTimeSimulation(
        r.world,
        1.0,
        lock=r.service.lock,
        on_step=r.service.refresh,
        publish=r.service.publish,
    )
    r.sim.step(30)
    return r


@contextmanager
def lock_held_elsewhere(r: Rig) -> Iterator[None]:
    """Another thread holds the service's lock (as a long reconcile step does) until exit."""
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with r.service.lock:
            held.set()
            release.wait(30)

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    assert held.wait(10)
    try:
        yield
    finally:
        release.set()
        holder.join(10)


def answers_within(read: Callable[[], object], seconds: float) -> bool:
    """Whether ``read`` returns within ``seconds`` (run on its own thread)."""
    done = threading.Event()

    def run() -> None:
        read()
        done.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return done.wait(seconds)


def test_reads_answer_while_another_thread_holds_the_lock() -> None:
    r = publishing()
    r.service.apply_wave("wave-1", alias(NEWEST))
    with lock_held_elsewhere(r):
        assert answers_within(r.service.status, 2.0)
        assert answers_within(lambda: r.service.wave("wave-1"), 2.0)
        # the other reads still wait for the lock: only status and waves are published
        assert not answers_within(r.service.events, 0.3)


def test_without_a_loop_reads_wait_for_the_lock_and_compute_fresh() -> None:
    r = rig(nodes=10)
    with lock_held_elsewhere(r):
        assert not answers_within(r.service.status, 0.3)
    before = r.service.status().time
    r.sim.step(30)
    assert r.service.status().time != before


def test_a_read_after_apply_sees_the_wave_and_the_snapshot_carries_its_time() -> None:
    r = publishing()
    created, applied = r.service.apply_wave("wave-1", alias(NEWEST))
    assert created
    assert applied.phase == "progressing"
    assert wire(r.service.wave("wave-1")) == wire(applied)
    status = r.service.status()
    assert status.active_wave == "wave-1"
    # the world moves on without publishing: reads answer the snapshot, its time says when
    r.world.run_until(r.world.clock.now() + timedelta(seconds=30))
    assert r.service.status().time == status.time
    r.sim.step(30)
    assert r.service.status().time != status.time


def test_the_published_documents_equal_fresh_ones_when_nothing_changed() -> None:
    r = rig(nodes=10)
    r.service.apply_wave("wave-1", alias(NEWEST))
    r.sim.step(60)
    fresh_status, fresh_wave = r.service.status(), r.service.wave("wave-1")
    r.service.publish()
    assert wire(r.service.status()) == wire(fresh_status)
    assert wire(r.service.wave("wave-1")) == wire(fresh_wave)


def test_a_wave_finished_long_ago_is_read_under_the_lock() -> None:
    r = publishing(nodes=4)
    r.service.apply_wave("wave-1", alias(NEWEST))
    wave = r.run_until_not("wave-1", "progressing")
    assert wave.phase == "converged"
    published = r.service.published
    assert published is not None
    assert published.wave("wave-1") is not None
    r.sim.step(RECENT.total_seconds() + 60)
    published = r.service.published
    assert published is not None
    assert published.wave("wave-1") is None
    assert r.service.wave("wave-1").phase == "converged"
    with lock_held_elsewhere(r):
        assert not answers_within(lambda: r.service.wave("wave-1"), 0.3)
