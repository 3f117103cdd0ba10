"""What the drift checks read of an instance (its subnet, security groups and capacity
reservation), described in batches and kept for a while.

A drift round asks about every launched instance. Described one call each, 5,000 instances
were 5,000 DescribeInstances calls in one step of the agent's loop; Karpenter's AWS provider
merges the DescribeInstances calls its controllers make at about the same time into one call
(its batcher). :class:`Descriptions` does the same in its own way: a lookup that finds no fresh
description describes, in one call, the instance asked about and up to :data:`BATCH` - 1 other
instances, launched since or described before with descriptions gone stale, so the rest of the
round is answered from what that call brought. A description serves for ``ttl`` seconds (30 s).

The call filters on ``instance-id``, so an instance that no longer exists is simply absent from
the answer (EC2 refuses a whole ``InstanceIds`` list for one unknown id). An instance absent or
terminated is described as None and forgotten once stale. A failed call describes the
instance asked about as None and leaves the others as they were.

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


class Descriptions:
    """See the module docstring."""

    def __init__(
        self,
        describe: Describe,
        *,
        ttl: float = 30.0,
        batch: int = BATCH,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._describe = describe
        self._ttl = ttl
        self._batch = batch
        self._clock = clock
        self._kept: dict[str, tuple[float, Described | None]] = {}
        self._launched: dict[str, None] = {}
        """Instances launched and not described yet, in order (the next call takes them)."""
        self.calls = 0
        """DescribeInstances calls made."""
        self._lock = threading.Lock()

    def get(self, instance_id: str) -> Described | None:
        """The instance's description at most ``ttl`` seconds old; None when it cannot be
        described (gone, terminated, or the call failed)."""
        with self._lock:
            return self._get(instance_id)

    def _get(self, instance_id: str) -> Described | None:
        now = self._clock()
        kept = self._kept.get(instance_id)
        if kept is not None and now - kept[0] < self._ttl:
            return kept[1]
        ids = [instance_id, *self._stale(now, instance_id)]
        self.calls += 1
        try:
            found = self._describe(ids)
        except (CloudError, AWSError):
            self._launched.pop(instance_id, None)
            self._kept[instance_id] = (now, None)
            return None
        for one in ids:
            self._launched.pop(one, None)
            instance = found.get(one)
            live = instance is not None and instance.get("State", {}).get("Name") != "terminated"
            self._kept[one] = (now, described(instance) if live and instance else None)
        return self._kept[instance_id][1]

    def launched(self, instance_id: str) -> None:
        """A new instance: the next call describes it too."""
        with self._lock:
            self._launched[instance_id] = None

    def forget(self, instance_id: str) -> None:
        """Drop what is kept of an instance (it was terminated)."""
        with self._lock:
            self._kept.pop(instance_id, None)
            self._launched.pop(instance_id, None)

    def _stale(self, now: float, asked: str) -> list[str]:
        """Up to ``batch`` - 1 other instances: those launched and not described yet, then those
        described before whose descriptions have gone stale; stale ones described as gone are
        forgotten on the way."""
        found = [one for one in self._launched if one != asked][: self._batch - 1]
        gone: list[str] = []
        for one, (at, what) in self._kept.items():
            if one == asked or now - at < self._ttl:
                continue
            if what is None:
                gone.append(one)
            elif len(found) < self._batch - 1:
                found.append(one)
        for one in gone:
            del self._kept[one]
        return found
