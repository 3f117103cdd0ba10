"""The PodDisruptionBudget index: its answers stay those of a count over every pod."""

from __future__ import annotations

import random
from typing import Any

from agent.api.kube import Pod, PodDisruptionBudget
from agent.kube.pdb import Owner, disruptions_allowed, selects
from agent.kube.pdbindex import BudgetIndex
from common.kubemodel import OwnerReference, parse_manifest

REPLICAS: dict[Owner, int] = {
    ("Deployment", "default", "web"): 4,
    ("Deployment", "other", "web"): 2,
}


def _pod(
    name: str,
    labels: dict[str, str],
    *,
    namespace: str = "default",
    bound: bool = False,
    owners: list[OwnerReference] | None = None,
) -> Pod:
    """A pod; ``labels`` is used as it is (not copied), as a workload's pods share theirs."""
    pod = Pod.model_validate(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "containers": [{"name": "c", "image": "i"}],
                "nodeName": "n1" if bound else None,
            },
            "status": {"phase": "Running" if bound else "Pending"},
        }
    )
    meta = pod.metadata.model_copy(update={"labels": labels, "owner_references": owners or []})
    return pod.model_copy(update={"metadata": meta})


def _budget(name: str, app: str, namespace: str = "default", **spec: Any) -> PodDisruptionBudget:
    return parse_manifest(
        PodDisruptionBudget,
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"selector": {"matchLabels": {"app": app}}, **spec},
        },
    )


def _expected(pods: list[Pod]) -> int | None:
    """The scale of the pods' controllers, as the index reads it from REPLICAS."""
    owners = set()
    for pod in pods:
        refs = [r for r in pod.metadata.owner_references if r.controller]
        if not refs:
            return None
        owners.add((refs[0].kind, pod.metadata.namespace or "default", refs[0].name))
    return sum(REPLICAS[owner] for owner in owners)


class _World:
    """Random pod and budget changes, fed to an index and kept as plain lists to check it."""

    OWNER = OwnerReference(
        api_version="apps/v1", kind="Deployment", name="web", uid="u", controller=True
    )

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.index = BudgetIndex(REPLICAS.get)
        self.shared = [{"app": "web"}, {"app": "db"}]  # a workload's pods share their labels
        self.pods: dict[tuple[str, str], Pod] = {}
        self.budgets: dict[str, PodDisruptionBudget] = {}

    def change_pod(self) -> None:
        rng = self.rng
        namespace = rng.choice(["default", "other"])
        labels = rng.choice([*self.shared, {"app": rng.choice(["web", "db"])}])
        owners = [self.OWNER] if rng.random() < 0.8 else []
        name = f"p{rng.randrange(30)}"
        pod = _pod(name, labels, namespace=namespace, bound=rng.random() < 0.6, owners=owners)
        self.pods[(namespace, name)] = pod
        self.index.pod_changed(pod)

    def delete_pod(self) -> None:
        pod = self.pods.pop(self.rng.choice(sorted(self.pods)))
        self.index.pod_changed(pod, deleted=True)

    def change_budget(self) -> None:
        rng = self.rng
        size: dict[str, Any] = rng.choice([{"minAvailable": 1}, {"maxUnavailable": "25%"}, {}])
        namespace, name = rng.choice(["default", "other"]), rng.choice(["a", "b"])
        budget = _budget(name, rng.choice(["web", "db"]), namespace, **size)
        self.budgets[f"{namespace}/{name}"] = budget
        self.index.budget_changed(budget)

    def delete_budget(self) -> None:
        budget = self.budgets.pop(self.rng.choice(sorted(self.budgets)))
        self.index.budget_changed(budget, deleted=True)

    def step(self) -> None:
        roll = self.rng.random()
        if roll < 0.5 or not self.pods:
            self.change_pod()
        elif roll < 0.75:
            self.delete_pod()
        elif roll < 0.9 or not self.budgets:
            self.change_budget()
        else:
            self.delete_budget()

    def check(self) -> None:
        """The index answers as a count over every pod does."""
        everything = list(self.pods.values())
        for budget in self.budgets.values():
            assert self.index.status(budget) == disruptions_allowed(budget, everything, _expected)
        for pod in everything:
            wanted = [b for _, b in sorted(self.budgets.items()) if selects(b, pod)]
            assert self.index.covering(pod) == wanted


def test_counts_follow_pods_and_budgets_in_any_order() -> None:
    for seed in range(5):
        world = _World(seed)
        for step in range(300):
            world.step()
            if step % 10 == 0:
                world.check()
        world.check()


def test_a_pod_that_changes_labels_moves_between_budgets() -> None:
    index = BudgetIndex(REPLICAS.get)
    web, db = _budget("web", "web"), _budget("db", "db")
    index.budget_changed(web)
    index.budget_changed(db)
    pod = _pod("p", {"app": "web"}, bound=True)
    index.pod_changed(pod)
    assert index.covering(pod) == [web]
    assert index.status(web)[1] == 1
    moved = pod.model_copy(
        update={"metadata": pod.metadata.model_copy(update={"labels": {"app": "db"}})}
    )
    index.pod_changed(moved)
    assert index.covering(moved) == [db]
    assert index.status(web)[1] == 0
    assert index.status(db)[1] == 1


def test_covering_reads_the_indexed_pod_and_a_forgotten_pod_has_none() -> None:
    index = BudgetIndex(REPLICAS.get)
    web = _budget("web", "web")
    index.budget_changed(web)
    pod = _pod("p", {"app": "web"})
    assert index.covering(pod) == []  # not indexed yet
    index.pod_changed(pod)
    assert index.covering(pod) == [web]
    index.pod_changed(pod, deleted=True)
    assert index.covering(pod) == []
    assert index.selecting(pod) == [web]
