"""Leader election through a ``coordination.k8s.io/v1`` Lease, as Kubernetes controllers do.

Two replicas of the agent run; one leads and acts, the other waits. :class:`LeaderElector`
follows client-go's leader election: a replica takes the Lease when it is absent, released or
expired, then renews it every ``retry`` seconds; it leads while its last renewal is younger than
``renew_deadline``. Expiry is judged by when this replica last saw the Lease change (not by the
holder's clock), so clock skew between nodes cannot hand the Lease to two replicas. Writes
carry the ``resourceVersion`` read, so two candidates racing for the Lease cannot both win. On
:meth:`LeaderElector.close` a leader releases the Lease (holder cleared), so the other replica
takes over at once rather than after the lease duration.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from agent.kube.port import ClusterError, NotFound
from agent.kube.real.resources import LEASES
from agent.kube.real.rest import KubeREST

LOG = logging.getLogger("driftwave.agent.leader")
LEASE_NAME = "driftwave-agent"


def micro_time(at: float) -> str:
    """A Lease timestamp (MicroTime) for a POSIX time."""
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    """See the module docstring."""

    def __init__(
        self,
        rest: KubeREST,
        *,
        namespace: str,
        identity: str,
        name: str = LEASE_NAME,
        lease_seconds: float = 15.0,
        renew_deadline: float = 10.0,
        retry: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.rest = rest
        self.namespace = namespace
        self.identity = identity
        self.name = name
        self.lease_seconds = lease_seconds
        self.renew_deadline = renew_deadline
        self.retry = retry
        self._clock = clock
        self._wall = wall
        self._renewed: float | None = None
        self._seen: tuple[str, str] | None = None
        self._seen_at = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="leader-election", daemon=True)

    def start(self) -> None:
        """Start trying to lead, in the background."""
        self._thread.start()

    def leading(self) -> bool:
        """Whether this replica holds the Lease now."""
        renewed = self._renewed
        return renewed is not None and self._clock() - renewed < self.renew_deadline

    def close(self) -> None:
        """Stop; a leader releases the Lease."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        if self.leading():
            try:
                self._release()
            except ClusterError as exc:
                LOG.warning("could not release the leader Lease: %s", exc)
        self._renewed = None

    def try_once(self) -> bool:
        """One attempt to take or renew the Lease; whether this replica leads after it."""
        path = LEASES.path(self.namespace, self.name)
        now, wall = self._clock(), self._wall()
        try:
            lease = self.rest.request("GET", path)
        except NotFound:
            lease = None
        if lease is None:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": self._spec(wall, acquired=wall, transitions=0),
            }
            self.rest.request("POST", LEASES.path(self.namespace), body=body)
            return self._won(now)
        spec: dict[str, Any] = lease.get("spec") or {}
        holder = str(spec.get("holderIdentity") or "")
        observed = (holder, str(spec.get("renewTime") or ""))
        if observed != self._seen:
            self._seen, self._seen_at = observed, now
        duration = float(spec.get("leaseDurationSeconds") or self.lease_seconds)
        if holder and holder != self.identity and now < self._seen_at + duration:
            self._renewed = None
            return False
        transitions = int(spec.get("leaseTransitions") or 0)
        if holder == self.identity:
            new = self._spec(wall, acquired=None, transitions=transitions)
            new["acquireTime"] = spec.get("acquireTime") or micro_time(wall)
        else:
            new = self._spec(wall, acquired=wall, transitions=transitions + 1)
            LOG.info("taking the leader Lease %s/%s (was %r)", self.namespace, self.name, holder)
        lease["spec"] = new
        self.rest.request("PUT", path, body=lease)
        return self._won(now)

    def _spec(self, wall: float, *, acquired: float | None, transitions: int) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": int(self.lease_seconds),
            "renewTime": micro_time(wall),
            "leaseTransitions": transitions,
        }
        if acquired is not None:
            spec["acquireTime"] = micro_time(acquired)
        return spec

    def _won(self, now: float) -> bool:
        if self._renewed is None:
            LOG.info("leading as %s", self.identity)
        self._renewed = now
        return True

    def _release(self) -> None:
        path = LEASES.path(self.namespace, self.name)
        lease = self.rest.request("GET", path)
        spec = lease.get("spec") or {}
        if spec.get("holderIdentity") != self.identity:
            return
        spec["holderIdentity"] = ""
        spec["leaseDurationSeconds"] = 1
        spec["renewTime"] = micro_time(self._wall())
        lease["spec"] = spec
        self.rest.request("PUT", path, body=lease)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.try_once()
            except ClusterError as exc:
                LOG.warning("leader election: %s", exc)
            self._stop.wait(self.retry)
