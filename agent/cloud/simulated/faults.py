"""Faults a scenario injects into the simulated cloud.

* **Insufficient capacity** on offerings: :meth:`Faults.insufficient_capacity` takes any of
  instance type, zone and capacity type (an omitted one matches every value) and an optional end
  time. While it holds, a launch on a matching offering fails with EC2's
  ``InsufficientInstanceCapacity``: the simulated cloud marks the offering in the
  unavailable-offerings cache and tries the next offering of the launch request.
* **Launch failures**: :meth:`Faults.fail_launches` makes the next launch requests fail outright
  with an error code (``RequestLimitExceeded`` by default, retryable).

Faulty images are not a fault here: an AMI is marked faulty in the AMI catalog
(:meth:`~agent.cloud.simulated.amis.AMICatalog.publish` with ``faulty=True``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from agent.catalog.types import CapacityType


@dataclass(frozen=True, slots=True)
class CapacityShortage:
    """Insufficient capacity on the matching offerings (None matches anything) until ``until``."""

    instance_type: str | None = None
    zone: str | None = None
    capacity_type: CapacityType | None = None
    until: datetime | None = None
    """When capacity comes back (exclusive); None: until the shortage is removed."""

    def matches(self, instance_type: str, zone: str, capacity_type: CapacityType) -> bool:
        """Whether the shortage covers this offering (ignoring time)."""
        return (
            self.instance_type in (None, instance_type)
            and self.zone in (None, zone)
            and self.capacity_type in (None, capacity_type)
        )

    def active(self, now: datetime) -> bool:
        """Whether the shortage still holds at ``now``."""
        return self.until is None or now < self.until


@dataclass(frozen=True, slots=True)
class LaunchFailure:
    """One injected launch refusal."""

    reason: str
    message: str
    retryable: bool


class Faults:
    """The faults in force; the simulated cloud consults them on every launch."""

    def __init__(self) -> None:
        self._shortages: list[CapacityShortage] = []
        self._failures: list[LaunchFailure] = []

    def insufficient_capacity(
        self,
        *,
        instance_type: str | None = None,
        zone: str | None = None,
        capacity_type: CapacityType | None = None,
        until: datetime | None = None,
    ) -> CapacityShortage:
        """Make matching offerings lack capacity until ``until`` (aware) or until removed."""
        if until is not None and until.tzinfo is None:
            raise ValueError("until must be timezone-aware")
        shortage = CapacityShortage(instance_type, zone, capacity_type, until)
        self._shortages.append(shortage)
        return shortage

    def remove(self, shortage: CapacityShortage) -> None:
        """End a shortage now."""
        self._shortages.remove(shortage)

    def lacks_capacity(
        self, instance_type: str, zone: str, capacity_type: CapacityType, now: datetime
    ) -> bool:
        """Whether a shortage in force at ``now`` covers the offering."""
        if not self._shortages:  # asked for every offering of every launch
            return False
        return any(
            s.active(now) and s.matches(instance_type, zone, capacity_type) for s in self._shortages
        )

    def fail_launches(
        self,
        count: int = 1,
        *,
        reason: str = "RequestLimitExceeded",
        message: str = "injected launch failure",
        retryable: bool = True,
    ) -> None:
        """Make the next ``count`` launch requests fail with ``reason``."""
        if count < 1:
            raise ValueError(f"count must be at least 1, not {count}")
        self._failures.extend(LaunchFailure(reason, message, retryable) for _ in range(count))

    def next_launch_failure(self) -> LaunchFailure | None:
        """The injected failure for this launch request, if any (consumes it)."""
        return self._failures.pop(0) if self._failures else None

    def clear(self) -> None:
        """Remove every fault."""
        self._shortages.clear()
        self._failures.clear()
