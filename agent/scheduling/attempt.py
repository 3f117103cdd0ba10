"""How far a pod's soft constraints are relaxed, in Karpenter's order.

A pod that fits nowhere with every preference enforced is tried again with one more soft
constraint dropped: first the next OR-ed required node-affinity term, then the heaviest preferred
pod-affinity and pod-anti-affinity terms, the heaviest preferred node-affinity terms and the
ScheduleAnyway spread constraints one at a time, and at last PreferNoSchedule taints tolerated.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from agent.scheduling.pods import AffinityTerm, PodShape


class Attempt(NamedTuple):
    """One step of relaxation (see the module docstring); the default enforces everything.
    A tuple: the solve keys its per-attempt caches by it, and a tuple hashes and compares
    without Python code."""

    alternative: int = 0
    pod_affinity: int = 0
    pod_anti_affinity: int = 0
    node_preference: int = 0
    schedule_anyway: int = 0
    tolerate_prefer_no_schedule: bool = False

    @property
    def prefer_no_schedule(self) -> bool:
        """Whether PreferNoSchedule taints still keep the pod away."""
        return not self.tolerate_prefer_no_schedule

    def relaxed(self, shape: PodShape) -> Attempt | None:
        """The next, looser attempt, or None when nothing is left to relax."""
        anyway = sum(1 for s in shape.spread if not s.do_not_schedule)
        if self.alternative + 1 < len(shape.alternatives):
            return self._replace(alternative=self.alternative + 1)
        if self.pod_affinity < len(shape.preferred_affinity):
            return self._replace(pod_affinity=self.pod_affinity + 1)
        if self.pod_anti_affinity < len(shape.preferred_anti_affinity):
            return self._replace(pod_anti_affinity=self.pod_anti_affinity + 1)
        if self.node_preference < len(shape.preferred):
            return self._replace(node_preference=self.node_preference + 1)
        if self.schedule_anyway < anyway:
            return self._replace(schedule_anyway=self.schedule_anyway + 1)
        if not self.tolerate_prefer_no_schedule:
            return self._replace(tolerate_prefer_no_schedule=True)
        return None


def heaviest_first_dropped(terms: Sequence[AffinityTerm], dropped: int) -> list[bool]:
    """For each term (in spec order), whether it is still enforced after dropping the
    ``dropped`` heaviest (ties in spec order), as Karpenter sorts and drops them."""
    order = sorted(range(len(terms)), key=lambda i: -terms[i].weight)
    gone = set(order[:dropped])
    return [i not in gone for i in range(len(terms))]
