"""An eviction the API server answers 409 because it could not record the disruption on the
pod's PodDisruptionBudget (other evictions or the disruption controller changed the budget, and
the API server's own retries ran out) did not evict the pod: the live cluster reports it as a
refused eviction, which the terminator retries after a backoff. Karpenter v1.14.1 reads every
409 as "a different pod now" and never evicts that pod again, so its drain stalls (seen in the
live benchmark, ``bench/live.py``). The answers below are the API server's own, as its audit log
recorded them during that run."""

from __future__ import annotations

from typing import Any

import pytest

from agent.kube.port import EvictionBlocked
from agent.kube.real.cluster import KubeCluster
from agent.kube.real.rest import Conflict, error_for

BUDGET_CONFLICT: dict[str, Any] = {
    "kind": "Status",
    "apiVersion": "v1",
    "status": "Failure",
    "message": 'Operation cannot be fulfilled on poddisruptionbudgets.policy "memory": the object '
    "has been modified; please apply your changes to the latest version and try again",
    "reason": "Conflict",
    "details": {"name": "memory", "group": "policy", "kind": "poddisruptionbudgets"},
    "code": 409,
}
POD_CONFLICT: dict[str, Any] = {
    "kind": "Status",
    "apiVersion": "v1",
    "status": "Failure",
    "message": 'Operation cannot be fulfilled on pods "memory-1": the object has been modified',
    "reason": "Conflict",
    "details": {"name": "memory-1", "kind": "pods"},
    "code": 409,
}


class Answering:
    """A REST client whose every request gets the API server's answer ``status``/``answer``
    (a stand-in: the race that produces a budget's 409 cannot be made to happen on demand)."""

    def __init__(self, status: int, answer: dict[str, Any]) -> None:
        self.status, self.answer = status, answer
        self.sent: list[tuple[str, str]] = []

    def request(self, method: str, path: str, **_: Any) -> dict[str, Any]:
        self.sent.append((method, path))
        raise error_for(self.status, self.answer, f"{method} {path}")


def cluster(rest: Answering) -> KubeCluster:
    return KubeCluster(rest)  # type: ignore[arg-type]  # only evict is called: it sends one POST


def test_a_409_keeps_the_api_servers_answer() -> None:
    error = error_for(409, BUDGET_CONFLICT, "POST eviction")
    assert isinstance(error, Conflict)
    assert error.answer["details"]["kind"] == "poddisruptionbudgets"


def test_a_budget_conflict_is_a_refused_eviction_naming_the_budget() -> None:
    rest = Answering(409, BUDGET_CONFLICT)
    with pytest.raises(EvictionBlocked) as refused:
        cluster(rest).evict("memory-1", "default")
    assert refused.value.budget == "memory"
    assert refused.value.retryable
    assert rest.sent == [("POST", "/api/v1/namespaces/default/pods/memory-1/eviction")]


def test_a_conflict_on_the_pod_itself_is_not_taken_for_a_refusal() -> None:
    with pytest.raises(Conflict) as raised:
        cluster(Answering(409, POD_CONFLICT)).evict("memory-1", "default")
    assert not isinstance(raised.value, EvictionBlocked)
