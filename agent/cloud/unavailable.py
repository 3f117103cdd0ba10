"""The unavailable-offerings cache (Karpenter's "ICE cache").

When a launch hits insufficient capacity (EC2's ``InsufficientInstanceCapacity``) on an offering
(instance type, zone, capacity type), the offering is marked unavailable for a while (three
minutes by default, as in Karpenter's AWS provider) so that the solver and the next launches
avoid it; once the mark expires the offering is tried again. Marking an offering again restarts
its time. A whole capacity type can be marked too (EC2 answers some spot errors, such as a
missing service-linked role or the account's spot limit, for every spot offering at once).

Time is read through the :class:`~agent.clock.Clock`, so a virtual clock drives expiry in
simulations. Shared by every cloud adapter.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from agent.catalog.types import CapacityType, Offering
from agent.clock import Clock
from agent.cloud.port import OfferingKey

DEFAULT_TTL = timedelta(minutes=3)
"""How long an offering stays unavailable after insufficient capacity (Karpenter's value)."""


class UnavailableOfferings:
    """Offerings (and capacity types) that recently lacked capacity, each until its mark expires."""

    def __init__(self, clock: Clock, *, ttl: timedelta = DEFAULT_TTL) -> None:
        if ttl <= timedelta(0):
            raise ValueError(f"the time to live must be positive, not {ttl}")
        self._clock = clock
        self._ttl = ttl
        self._offerings: dict[OfferingKey, datetime] = {}
        self._capacity_types: dict[CapacityType, datetime] = {}
        self._reasons: dict[OfferingKey, str] = {}

    @property
    def ttl(self) -> timedelta:
        """How long a mark lasts."""
        return self._ttl

    def mark_unavailable(
        self, instance_type: str, zone: str, capacity_type: CapacityType, reason: str = ""
    ) -> datetime:
        """Mark one offering unavailable for the TTL from now; return when the mark expires."""
        key = OfferingKey(instance_type, zone, capacity_type)
        expires = self._clock.now() + self._ttl
        self._offerings[key] = expires
        self._reasons[key] = reason
        return expires

    def mark_capacity_type_unavailable(self, capacity_type: CapacityType) -> datetime:
        """Mark every offering of ``capacity_type`` unavailable for the TTL from now."""
        expires = self._clock.now() + self._ttl
        self._capacity_types[capacity_type] = expires
        return expires

    def is_unavailable(self, instance_type: str, zone: str, capacity_type: CapacityType) -> bool:
        """Whether the offering (or its whole capacity type) carries a mark that has not expired."""
        now = self._clock.now()
        type_mark = self._capacity_types.get(capacity_type)
        if type_mark is not None and now < type_mark:
            return True
        mark = self._offerings.get(OfferingKey(instance_type, zone, capacity_type))
        return mark is not None and now < mark

    @property
    def empty(self) -> bool:
        """Whether no offering or capacity type carries a mark (expired ones included)."""
        return not self._offerings and not self._capacity_types

    def apply(self, instance_type: str, offerings: tuple[Offering, ...]) -> tuple[Offering, ...]:
        """``offerings`` of ``instance_type`` with the marked ones turned unavailable.

        Returns the same tuple when nothing changes, so callers may share unchanged offerings.
        """
        if self.empty:
            return offerings
        changed = False
        out: list[Offering] = []
        for offering in offerings:
            if offering.available and self.is_unavailable(
                instance_type, offering.zone, offering.capacity_type
            ):
                out.append(Offering(offering.zone, offering.capacity_type, offering.price, False))
                changed = True
            else:
                out.append(offering)
        return tuple(out) if changed else offerings

    def entries(self) -> dict[OfferingKey, datetime]:
        """The offerings marked now, with when each mark expires (expired marks are dropped)."""
        self._prune()
        return dict(self._offerings)

    def reason(self, key: OfferingKey) -> str:
        """The reason given when ``key`` was last marked ("" when unknown)."""
        return self._reasons.get(key, "")

    def clear(self) -> None:
        """Forget every mark."""
        self._offerings.clear()
        self._capacity_types.clear()
        self._reasons.clear()

    def _prune(self) -> None:
        now = self._clock.now()
        for key in [key for key, expires in self._offerings.items() if expires <= now]:
            del self._offerings[key]
            self._reasons.pop(key, None)
        for capacity_type in [ct for ct, expires in self._capacity_types.items() if expires <= now]:
            del self._capacity_types[capacity_type]
