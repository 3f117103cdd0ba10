"""What a simulation measures about disruption, as it happens.

Fed with the timeline's events and the cluster's pod deletions, it keeps:

* per NodePool, the most nodes disrupting at once (carrying ``karpenter.sh/disrupted``), and the
  number of nodes disrupted per method and reason;
* ``pdbViolations``: moments when a pod the agent evicted left a PodDisruptionBudget with fewer
  healthy pods than it requires (checked independently of the Eviction API's own decision);
* ``podsLost``: pods the agent evicted or deleted that no controller will recreate (bare pods);
* the number of initialized nodes per image over time.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from agent.api.kube import Pod
from agent.kube.pdbindex import BudgetIndex


@dataclass
class _Node:
    pool: str
    image: str


@dataclass
class DisruptionMetrics:
    """See the module docstring."""

    max_concurrent: dict[str, int] = field(default_factory=dict)
    disrupted: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    """(NodePool, method, reason) → nodes."""
    pdb_violations: list[dict[str, Any]] = field(default_factory=list)
    pods_lost: int = 0
    images: list[dict[str, Any]] = field(default_factory=list)
    _nodes: dict[str, _Node] = field(default_factory=dict)
    _tainted: dict[str, set[str]] = field(default_factory=dict)
    _counts: Counter[str] = field(default_factory=Counter)

    def observe(self, t: float, kind: str, obj: str, details: dict[str, Any]) -> None:
        """One timeline event."""
        name = obj.partition("/")[2]
        if kind == "Initialized":
            node = str(details.get("node") or "")
            info = _Node(str(details.get("nodepool") or ""), str(details.get("imageID") or ""))
            self._nodes[node] = info
            self._image(t, info.image, +1)
        elif kind == "Tainted" and name in self._nodes:
            tainted = self._tainted.setdefault(self._nodes[name].pool, set())
            tainted.add(name)
            pool = self._nodes[name].pool
            self.max_concurrent[pool] = max(self.max_concurrent.get(pool, 0), len(tainted))
        elif kind == "Untainted" and name in self._nodes:
            self._tainted.get(self._nodes[name].pool, set()).discard(name)
        elif kind == "NodeDeleted" and name in self._nodes:
            info = self._nodes.pop(name)
            self._tainted.get(info.pool, set()).discard(name)
            self._image(t, info.image, -1)
        elif kind == "Disrupted":
            key = (
                str(details.get("nodepool") or ""),
                str(details.get("method") or ""),
                str(details.get("reason") or ""),
            )
            self.disrupted[key] += 1
        elif kind == "Expired":
            self.disrupted[(str(details.get("nodepool") or ""), "expiration", "Expired")] += 1
        elif kind in ("Evicted", "PodDeleted") and not details.get("controller", True):
            self.pods_lost += 1

    def pod_removed(self, t: float, pod: Pod, budgets: BudgetIndex) -> None:
        """After the agent evicted ``pod``: does a budget covering it have too few healthy pods?
        ``budgets`` is the world's own index of the cluster (not the Eviction API's)."""
        for budget in budgets.selecting(pod):
            _, healthy, desired = budgets.status(budget)
            if healthy < desired:
                self.pdb_violations.append(
                    {
                        "t": t,
                        "pdb": budget.metadata.name,
                        "pod": f"{pod.metadata.namespace or 'default'}/{pod.metadata.name}",
                        "healthy": healthy,
                        "desired": desired,
                    }
                )

    def _image(self, t: float, image: str, delta: int) -> None:
        self._counts[image] += delta
        if self._counts[image] <= 0:
            del self._counts[image]
        point = {"t": t, "nodes": dict(sorted(self._counts.items()))}
        if self.images and self.images[-1]["t"] == t:
            self.images[-1] = point
        else:
            self.images.append(point)

    def summary(self, pools: list[str]) -> dict[str, Any]:
        """The figures for the scenario report's ``summary``."""
        per_pool: dict[str, Any] = {}
        for pool in sorted(set(pools) | set(self.max_concurrent)):
            per_pool[pool] = {
                "maxConcurrentDisruptions": self.max_concurrent.get(pool, 0),
                "disrupted": {
                    f"{method}/{reason}": count
                    for (p, method, reason), count in sorted(self.disrupted.items())
                    if p == pool
                },
            }
        return {
            "nodePools": per_pool,
            "pdbViolations": len(self.pdb_violations),
            "pdbViolationDetails": self.pdb_violations,
            "podsLost": self.pods_lost,
            "nodesPerImage": self.images,
        }
