"""What the drift checks read of an instance (its subnet, security groups and capacity
reservation), kept from a listing of the cluster's instances made every two minutes, as
Karpenter's AWS provider keeps its instance cache.

A drift round asks about every launched instance. Karpenter's AWS provider answers its drift
checks from a cache of instances whose entries never expire: its garbage-collection controller
lists every instance of the cluster every two minutes (DescribeInstances by the cluster's tags,
1,000 a page), which refreshes the cache and drops what is no longer listed, and a lookup that
misses describes the instance (its batcher merges the lookups made at about the same time into
one call). :class:`Descriptions` does the same: a lookup made when the last listing is
:data:`LIST_EVERY` seconds old or older lists again first (so a round over 5,000 instances costs
5 pages every two minutes); one that misses describes, in one call filtered on ``instance-id``,
the instance asked about and up to :data:`BATCH` - 1 instances launched since and not yet
described. Before, descriptions went stale after 30 s and were described again 200 at a time:
at 2,000 instances, 10 calls every 30 s, which kept the agent's loop in DescribeInstances.

The call filters on ``instance-id``, so an instance that no longer exists is simply absent from
the answer (EC2 refuses a whole ``InstanceIds`` list for one unknown id). An instance absent or
terminated is described as None, until the next listing forgets it. A failed call describes
the instance asked about as None and leaves the others as they were; a failed listing keeps
what was kept, and the next listing is tried :data:`LIST_EVERY` seconds later.

Launches run on several threads and each says what it launched (:meth:`Descriptions.launched`),
so what is kept is changed under a lock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent.cloud.aws.errors import AWSError
from agent.cloud.port import CloudError

BATCH = 200
"""Instance ids in one DescribeInstances filter (EC2 takes up to 200 values in a filter)."""
LIST_EVERY = 120.0
"""Seconds between two listings of the cluster's instances (Karpenter's garbage collection
lists every two minutes)."""


@dataclass(frozen=True)
class Described:
    """The parts of an instance's description the drift checks read."""

    subnet: str | None
    groups: tuple[str, ...]
    reservation: str | None


def described(instance: Mapping[str, Any]) -> Described:
    """The parts the drift checks read, from one instance of a DescribeInstances answer. The
    groups are taken as they are: an instance described in none has none (``()``)."""
    groups = tuple(
        str(g["GroupId"]) for g in instance.get("SecurityGroups") or [] if "GroupId" in g
    )
    subnet = instance.get("SubnetId")
    reservation = instance.get("CapacityReservationId")
    return Described(
        str(subnet) if subnet else None, groups, str(reservation) if reservation else None
    )


Describe = Callable[[Sequence[str]], Mapping[str, Mapping[str, Any]]]
"""DescribeInstances filtered on the ids given: instance id → its description, for those EC2
knows; raises when the call fails."""
Listing = Callable[[], Mapping[str, Described]]
"""Every live instance of the cluster (DescribeInstances by its tags, page by page): instance
id → what the drift checks read of it; raises when a call fails."""


class Descriptions:
    """See the module docstring."""

    def __init__(
        self,
        describe: Describe,
        listing: Listing,
        *,
        every: float = LIST_EVERY,
        batch: int = BATCH,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._describe = describe
        self._listing = listing
        self._every = every
        self._batch = batch
        self._clock = clock
        self._kept: dict[str, Described | None] = {}
        self._listed: float | None = None
        """When the last listing was made (or tried)."""
        self._launched: dict[str, None] = {}
        """Instances launched and not described yet, in order (the next call takes them)."""
        self.calls = 0
        """DescribeInstances calls made by id."""
        self.listings = 0
        """Listings made (each is one paginated DescribeInstances)."""
        self._lock = threading.Lock()

    def get(self, instance_id: str) -> Described | None:
        """The instance's description, from the last listing or described since (at most
        :data:`LIST_EVERY` seconds old); None when it cannot be described (gone, terminated,
        or the call failed)."""
        with self._lock:
            now = self._clock()
            if self._listed is None or now - self._listed >= self._every:
                self._list(now)
            if instance_id in self._kept:
                return self._kept[instance_id]
            return self._describe_missed(instance_id)

    def launched(self, instance_id: str) -> None:
        """A new instance: the next call describes it too."""
        with self._lock:
            self._launched[instance_id] = None

    def forget(self, instance_id: str) -> None:
        """Drop what is kept of an instance (it was terminated)."""
        with self._lock:
            self._kept.pop(instance_id, None)
            self._launched.pop(instance_id, None)

    def _list(self, now: float) -> None:
        """Keep what a new listing says, and only that; a failed listing keeps what was kept."""
        self._listed = now
        self.listings += 1
        try:
            listed = self._listing()
        except (CloudError, AWSError):
            return
        self._kept = dict(listed)
        for one in listed:
            self._launched.pop(one, None)

    def _describe_missed(self, instance_id: str) -> Described | None:
        others = [one for one in self._launched if one != instance_id][: self._batch - 1]
        ids = [instance_id, *others]
        self.calls += 1
        try:
            found = self._describe(ids)
        except (CloudError, AWSError):
            self._launched.pop(instance_id, None)
            self._kept[instance_id] = None
            return None
        for one in ids:
            self._launched.pop(one, None)
            instance = found.get(one)
            live = instance is not None and instance.get("State", {}).get("Name") != "terminated"
            self._kept[one] = described(instance) if live and instance else None
        return self._kept[instance_id]
