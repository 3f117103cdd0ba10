"""Status conditions of NodeClaims: read one, and set one the way Kubernetes controllers do.

A condition keeps its ``lastTransitionTime`` while its status stays the same.
"""

from __future__ import annotations

from datetime import datetime

from agent.api.nodeclaim import NodeClaim
from common.kubemodel import Condition


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


class ConditionMemo:
    """NodeClaims' conditions by type, for controllers that look at every claim pass after
    pass: kept while a claim's conditions are the same list object (a change is a copy with a
    new list; the entry holds the list, so its identity cannot be reused)."""

    def __init__(self) -> None:
        self._by_name: dict[str, tuple[object, dict[str, Condition]]] = {}

    def get(self, claim: NodeClaim, kind: str) -> Condition | None:
        """The claim's condition of type ``kind``, if any (the first, as :func:`condition`)."""
        conditions = claim.status.conditions
        hit = self._by_name.get(claim.name)
        if hit is None or hit[0] is not conditions:
            by_type = {c.type: c for c in reversed(conditions)}
            hit = self._by_name[claim.name] = (conditions, by_type)
        return hit[1].get(kind)

    def is_true(self, claim: NodeClaim, kind: str) -> bool:
        """Whether the claim's condition ``kind`` is True."""
        found = self.get(claim, kind)
        return found is not None and found.status == "True"

    def retain(self, names: set[str]) -> None:
        """Forget the claims not named in ``names``."""
        if len(self._by_name) > len(names) + 100:
            self._by_name = {n: hit for n, hit in self._by_name.items() if n in names}


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
