"""The order pods are tried in within one solve, and when a solve stops retrying them.

As Karpenter's scheduling queue: pods are taken in a given order; a pod that fits nowhere goes
to the back of the queue and is tried again once the pods ahead of it have been tried, for as long
as the solve makes progress. When a pod comes up again with the queue as long as when it was put
back, every pod in the queue has failed since: nothing changed that could help it, and the solve
stops (the pods left are reported unschedulable and tried again in the next batch). This is what
lets a pod with affinity to pods of its own batch schedule once they have, and pods whose topology
needs an order (alternating between two groups, say) find it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from agent.scheduling.pods import HOSTNAME, PodRef, PodShape


class PodQueue:
    """Pods to try, in order, with Karpenter's retry rule (see the module docstring)."""

    def __init__(self, pods: Iterable[PodRef]) -> None:
        self._pods: deque[PodRef] = deque(pods)
        self._length_when_pushed: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self._pods)

    def pop(self) -> PodRef | None:
        """The next pod to try, or None when the queue is empty or made no progress since the
        next pod was put back."""
        if not self._pods:
            return None
        pod = self._pods[0]
        if self._length_when_pushed.get(id(pod)) == len(self._pods):
            return None
        self._pods.popleft()
        return pod

    def push(self, pod: PodRef) -> None:
        """Put a pod that fit nowhere at the back, to be tried again."""
        self._pods.append(pod)
        self._length_when_pushed[id(pod)] = len(self._pods)


def largest_first(pods: Iterable[PodRef]) -> list[PodRef]:
    """Karpenter's order: most CPU requested first, then most memory (stable otherwise)."""
    return sorted(
        pods, key=lambda p: (-p.shape.requests.get("cpu", 0), -p.shape.requests.get("memory", 0))
    )


def repellers(pods: Iterable[PodRef]) -> set[int]:
    """The shapes (by identity) whose required pod anti-affinity over a key other than the
    hostname selects pods of another pending shape.

    Placed first, such a pod takes a domain (a zone, say) away from the very pods it targets,
    which may need that domain; placed after them, it only has to avoid where they went. The
    driftwave order tries these pods after the others (Karpenter's order does so when they are
    the smaller pods, as they usually are).
    """
    shapes: dict[int, PodShape] = {id(pod.shape): pod.shape for pod in pods}
    out: set[int] = set()
    for key, shape in shapes.items():
        for term in shape.anti_affinity:
            if term.key == HOSTNAME or term.selector is None:
                continue
            selector, namespaces = term.selector, term.namespaces
            if any(
                other is not shape
                and other.namespace in namespaces
                and selector.matches(other.labels)
                for other in shapes.values()
            ):
                out.add(key)
                break
    return out


__all__ = ["PodQueue", "largest_first", "repellers"]
