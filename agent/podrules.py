"""Which pods a drain must move, which it may not touch, and which block a voluntary disruption.

The rules follow Karpenter v1:

* a pod is **terminal** when it Succeeded or Failed; terminal pods never block anything;
* a **static (mirror) pod** is owned by its Node; the API cannot delete it, so drains skip it;
* a pod tolerating ``karpenter.sh/disrupted:NoSchedule`` is left where it is (it opted to stay);
* ``karpenter.sh/do-not-disrupt`` on a pod is active when its value is ``"true"``, or a duration
  (e.g. ``"30m"``) the pod has not yet run for; an unparseable value counts as absent. A node
  running such a pod is not a candidate for voluntary disruption, and the terminator does not
  evict the pod: a drain waits for it (or for ``terminationGracePeriod``);
* a pod is **active** when it is neither terminal nor terminating (being deleted);
* a pod's **eviction cost** weighs what moving it costs, 1 by default, raised or lowered by its
  ``controller.kubernetes.io/pod-deletion-cost`` annotation (/ 2^27) and its priority (/ 2^25),
  kept within [-10, 10] (Karpenter's ``EvictionCost``);
* **reschedulable** pods are the ones a disruption moves: active (or a terminating StatefulSet
  pod, whose replacement cannot start before it is gone), not static, not DaemonSet pods.
"""

from __future__ import annotations

import contextlib
from datetime import datetime

from agent.api.kube import Pod
from agent.api.labels import DO_NOT_DISRUPT_ANNOTATION
from agent.scheduling.taints import DISRUPTED_NO_SCHEDULE_TAINT, tolerates
from common.durations import parse_duration

_CRITICAL_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})


def is_terminal(pod: Pod) -> bool:
    """Succeeded or Failed."""
    return pod.status is not None and pod.status.phase in ("Succeeded", "Failed")


def is_static(pod: Pod) -> bool:
    """A mirror pod of a static pod (owned by its Node)."""
    return any(ref.kind == "Node" for ref in pod.metadata.owner_references)


def is_daemon(pod: Pod) -> bool:
    """Owned by a DaemonSet."""
    return any(ref.kind == "DaemonSet" and ref.controller for ref in pod.metadata.owner_references)


def is_critical(pod: Pod) -> bool:
    """Of a system-critical priority class (drained last)."""
    return pod.spec.priority_class_name in _CRITICAL_CLASSES


def tolerates_disruption(pod: Pod) -> bool:
    """Tolerates ``karpenter.sh/disrupted:NoSchedule``, so no drain moves it."""
    return tolerates(pod.spec.tolerations or (), DISRUPTED_NO_SCHEDULE_TAINT)


def started(pod: Pod) -> datetime | None:
    """When the pod started, if it has."""
    if pod.status is None or not pod.status.start_time:
        return None
    return datetime.fromisoformat(pod.status.start_time.replace("Z", "+00:00"))


def do_not_disrupt_active(pod: Pod, now: datetime) -> bool:
    """Whether ``karpenter.sh/do-not-disrupt`` protects the pod at ``now`` (see module doc)."""
    value = pod.metadata.annotations.get(DO_NOT_DISRUPT_ANNOTATION)
    if value is None:
        return False
    if value == "true":
        return True
    try:
        duration = parse_duration(value)
    except ValueError:
        return False
    if duration is None:
        return True
    since = started(pod)
    if since is None:
        return True
    return now - since < duration


def do_not_disrupt_until(pod: Pod) -> datetime | None:
    """When a duration-valued ``karpenter.sh/do-not-disrupt`` stops protecting the started pod
    (None: no such annotation, ``"true"``, an unreadable value, or the pod has not started)."""
    value = pod.metadata.annotations.get(DO_NOT_DISRUPT_ANNOTATION)
    if value is None or value == "true":
        return None
    try:
        duration = parse_duration(value)
    except ValueError:
        return None
    since = started(pod)
    if duration is None or since is None:
        return None
    return since + duration


DELETION_COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"


def eviction_cost(pod: Pod) -> float:
    """What evicting ``pod`` costs a disruption (see the module docstring)."""
    cost = 1.0
    value = pod.metadata.annotations.get(DELETION_COST_ANNOTATION)
    if value is not None:
        with contextlib.suppress(ValueError):  # an unreadable value counts as absent
            cost += float(value) / 2**27
    if pod.spec.priority is not None:
        cost += pod.spec.priority / 2**25
    return min(10.0, max(-10.0, cost))


def drainable(pod: Pod) -> bool:
    """A pod a drain waits for: not terminal, not static, not tolerating the disrupted taint."""
    return not is_terminal(pod) and not is_static(pod) and not tolerates_disruption(pod)


def is_active(pod: Pod) -> bool:
    """Neither terminal nor terminating."""
    return not is_terminal(pod) and not pod.metadata.deletion_timestamp


def _stateful(pod: Pod) -> bool:
    return any(
        ref.kind == "StatefulSet" and ref.controller for ref in pod.metadata.owner_references
    )


def reschedulable(pod: Pod) -> bool:
    """A pod a disruption must find room for elsewhere: active, or a terminating StatefulSet pod
    (its successor needs the room), and neither static nor a DaemonSet pod."""
    if not (is_active(pod) or (_stateful(pod) and not is_terminal(pod))):
        return False
    return not is_static(pod) and not is_daemon(pod)


def drain_group(pod: Pod) -> int:
    """Eviction order: 0 non-critical, 1 non-critical DaemonSet, 2 critical, 3 critical daemon."""
    return (2 if is_critical(pod) else 0) + (1 if is_daemon(pod) else 0)
