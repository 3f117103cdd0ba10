"""Status conditions of NodeClaims: read one, and set one the way Kubernetes controllers do.

A condition keeps its ``lastTransitionTime`` while its status stays the same.
"""

from __future__ import annotations

from datetime import datetime

from agent.api.base import Condition
from agent.api.nodeclaim import NodeClaim


def stamp(when: datetime) -> str:
    """``when`` as an RFC 3339 timestamp with second precision."""
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def condition(claim: NodeClaim, kind: str) -> Condition | None:
    """The claim's condition of type ``kind``, if any."""
    for found in claim.status.conditions:
        if found.type == kind:
            return found
    return None


def is_true(claim: NodeClaim, kind: str) -> bool:
    """Whether the claim's condition ``kind`` is True."""
    found = condition(claim, kind)
    return found is not None and found.status == "True"


def with_condition(claim: NodeClaim, new: Condition, now: datetime) -> NodeClaim:
    """``claim`` with ``new`` replacing its condition of the same type.

    The transition time is ``now`` unless the status is unchanged, when the old one is kept.
    """
    old = condition(claim, new.type)
    since = old.last_transition_time if old is not None and old.status == new.status else None
    conditions = [c for c in claim.status.conditions if c.type != new.type]
    conditions.append(new.model_copy(update={"last_transition_time": since or stamp(now)}))
    return claim.model_copy(
        update={"status": claim.status.model_copy(update={"conditions": conditions})}
    )


def without_condition(claim: NodeClaim, kind: str) -> NodeClaim:
    """``claim`` without its condition ``kind`` (the same object when it has none)."""
    if condition(claim, kind) is None:
        return claim
    conditions = [c for c in claim.status.conditions if c.type != kind]
    return claim.model_copy(
        update={"status": claim.status.model_copy(update={"conditions": conditions})}
    )
