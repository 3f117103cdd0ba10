"""Leader election over a Lease on a real API server: one leader among candidates,
renewal, takeover only after expiry (judged by the observer's clock), release on close."""

from __future__ import annotations

from agent.kube.real.leader import LeaderElector
from agent.kube.real.resources import LEASES
from agent.kube.real.rest import KubeREST


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def elector(rest: KubeREST, namespace: str, identity: str, clock: Clock) -> LeaderElector:
    return LeaderElector(rest, namespace=namespace, identity=identity, clock=clock, wall=clock)


def lease(rest: KubeREST, namespace: str) -> dict[str, object]:
    spec: dict[str, object] = rest.request("GET", LEASES.path(namespace, "driftwave-agent"))["spec"]
    return spec


def test_one_candidate_leads_and_the_other_waits_for_expiry(rest: KubeREST, namespace: str) -> None:
    clock = Clock()
    a, b = elector(rest, namespace, "agent-a", clock), elector(rest, namespace, "agent-b", clock)
    assert a.try_once()
    assert a.leading()
    assert lease(rest, namespace)["holderIdentity"] == "agent-a"
    assert not b.try_once()
    assert not b.leading()

    clock.now += 5
    assert a.try_once(), "the leader renews"
    assert not b.try_once(), "a renewed lease is not expired"
    assert lease(rest, namespace)["leaseTransitions"] == 0

    clock.now += 11  # a stops renewing: past its renew deadline, a no longer leads
    assert not a.leading()
    assert not b.try_once(), "b saw the lease change 11 s ago; it lasts 15 s"
    clock.now += 5
    assert b.try_once()
    assert b.leading()
    spec = lease(rest, namespace)
    assert spec["holderIdentity"] == "agent-b"
    assert spec["leaseTransitions"] == 1
    assert not a.try_once(), "a sees b's fresh lease"


def test_a_leader_releases_the_lease_on_close(rest: KubeREST, namespace: str) -> None:
    clock = Clock()
    a, b = elector(rest, namespace, "agent-a", clock), elector(rest, namespace, "agent-b", clock)
    assert a.try_once()
    a.close()
    assert lease(rest, namespace)["holderIdentity"] == ""
    assert b.try_once(), "a released lease is taken at once"


def test_racing_candidates_cannot_both_win(rest: KubeREST, namespace: str) -> None:
    clock = Clock()
    a, b = elector(rest, namespace, "agent-a", clock), elector(rest, namespace, "agent-b", clock)
    assert a.try_once()
    a.close()  # released: both may now try
    stale = rest.request("GET", LEASES.path(namespace, "driftwave-agent"))
    assert b.try_once()
    stale["spec"]["holderIdentity"] = "agent-c"
    from agent.kube.real.rest import Conflict

    try:
        rest.request("PUT", LEASES.path(namespace, "driftwave-agent"), body=stale)
    except Conflict:
        pass
    else:
        raise AssertionError("a write from a stale read must conflict")
    assert lease(rest, namespace)["holderIdentity"] == "agent-b"


def test_the_background_thread_leads(rest: KubeREST, namespace: str) -> None:
    import time

    candidate = LeaderElector(rest, namespace=namespace, identity="agent-a", retry=0.05)
    candidate.start()
    deadline = time.monotonic() + 5
    while not candidate.leading():
        assert time.monotonic() < deadline
        time.sleep(0.02)
    candidate.close()
    assert not candidate.leading()
    assert lease(rest, namespace)["holderIdentity"] == ""
