"""The EC2NodeClass status controller's resolution, over AWS (Karpenter's node class controller).

:class:`NodeClassStatusResolver` computes a node class's ``status``: ``amis`` (through
:class:`~agent.cloud.aws.amis.AWSImages`), ``subnets`` and ``securityGroups`` (through
:class:`~agent.cloud.aws.network.Network`), the instance profile named in the spec, and the
conditions Karpenter v1 sets: ``AMIsReady``, ``SubnetsReady``, ``SecurityGroupsReady`` and the
root ``Ready`` (``False`` with reason ``UnhealthyDependents`` naming the dependents that are not
ready), each stamped with the ``metadata.generation`` it resolved (``observedGeneration``, as
Karpenter stamps them, so a reader can tell a status that is behind its spec). A part that does
not resolve gives its condition ``False`` with Karpenter's reason and message; an AWS failure
keeps the previous value of that part and says so, so a throttled call never empties a node
class's status. Never raises for a resolution problem.

Not resolved here (beyond what the agent needs to launch): instance profiles created from
``spec.role`` (the profile must be named in ``spec.instanceProfile`` or exist as
``<cluster>_<hash>`` outside the agent), and capacity reservations.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodeclass_status import EC2NodeClassStatus
from agent.clock import Clock, SystemClock
from agent.cloud.amiresolve import AMIResolutionError
from agent.cloud.aws.amis import AWSImages
from agent.cloud.aws.errors import AWSError
from agent.cloud.aws.network import Network
from common.kubemodel import Condition

READY = "Ready"


class NodeClassStatusResolver:
    """See the module docstring. Call it with a node class and the Kubernetes version."""

    def __init__(self, images: AWSImages, network: Network, clock: Clock | None = None) -> None:
        self.images = images
        self.network = network
        self._clock = clock if clock is not None else SystemClock()

    def __call__(self, nodeclass: EC2NodeClass, kubernetes_version: str) -> EC2NodeClassStatus:
        """The node class's status now (module docstring)."""
        old = nodeclass.status if nodeclass.status is not None else EC2NodeClassStatus()
        conditions: list[tuple[str, bool, str, str]] = []

        def part(
            kind: str, reason: str, empty: str, resolve: Callable[[], list[Any]], kept: list[Any]
        ) -> list[Any]:
            try:
                found = resolve()
            except AMIResolutionError as exc:
                conditions.append((kind, False, reason, str(exc)))
                return []
            except AWSError as exc:
                conditions.append((kind, bool(kept), "ResolutionFailed", str(exc)))
                return kept
            conditions.append((kind, bool(found), "" if found else reason, "" if found else empty))
            return found

        spec = nodeclass.spec
        amis = part(
            "AMIsReady",
            "AMINotFound",
            "AMISelector did not match any AMIs",
            lambda: self.images.resolve(nodeclass, kubernetes_version),
            old.amis,
        )
        subnets = part(
            "SubnetsReady",
            "SubnetsNotFound",
            "SubnetSelector did not match any Subnets",
            lambda: self.network.subnets(spec.subnet_selector_terms),
            old.subnets,
        )
        groups = part("SecurityGroupsReady", "SecurityGroupsNotFound",
                      "SecurityGroupSelector did not match any SecurityGroups",
                      lambda: self.network.security_groups(spec.security_group_selector_terms),
                      old.security_groups)  # fmt: skip
        unhealthy = [kind for kind, ok, _, _ in conditions if not ok]
        if unhealthy:
            message = ", ".join(f"{kind}=False" for kind in unhealthy)
            conditions.append((READY, False, "UnhealthyDependents", message))
        else:
            conditions.append((READY, True, READY, ""))
        return EC2NodeClassStatus(
            amis=amis,
            subnets=subnets,
            security_groups=groups,
            instance_profile=spec.instance_profile,
            conditions=[self._condition(old, c, nodeclass.metadata.generation) for c in conditions],
        )

    def _condition(
        self, old: EC2NodeClassStatus, new: tuple[str, bool, str, str], generation: int | None
    ) -> Condition:
        kind, ok, reason, message = new
        status = "True" if ok else "False"
        previous = next((c for c in old.conditions if c.type == kind), None)
        when = (
            previous.last_transition_time
            if previous is not None and previous.status == status
            else _stamp(self._clock.now())
        )
        return Condition(
            type=kind,
            status=status,
            reason=reason or kind,
            message=message,
            last_transition_time=when,
            observed_generation=generation,
        )


def _stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")
