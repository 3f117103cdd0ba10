"""The cluster's control plane through EKS: its Kubernetes version and version upgrades.

:class:`EKSControlPlane` reads the version with DescribeCluster (kept for ``refresh``, five
minutes by default, so the agent's loop can ask often) and starts an upgrade with
UpdateClusterVersion, following it with DescribeUpdate. EKS moves the control plane one minor
version at a time and never back; the caller checks that rule before asking (the agent service
does, :func:`agent.service.targets.check_version`). An upgrade takes EKS minutes: until
DescribeCluster reports the new version, :meth:`EKSControlPlane.version` keeps answering the old
one, so images resolve for the version the nodes can really join.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from agent.clock import Clock
from agent.cloud.aws.errors import AWSError, aws_call
from agent.cloud.aws.session import AWSClients

DEFAULT_REFRESH = timedelta(minutes=5)


class ControlPlaneError(Exception):
    """The control plane could not be read or upgraded; ``retryable`` as the AWS error was."""

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


@dataclass(frozen=True, slots=True)
class Upgrade:
    """An upgrade EKS accepted: its id, the version asked for and EKS's status of it."""

    id: str
    version: str
    status: str
    errors: tuple[str, ...] = ()

    @property
    def finished(self) -> bool:
        """Whether EKS has stopped working on it (successfully or not)."""
        return self.status in {"Successful", "Failed", "Cancelled"}


class EKSControlPlane:
    """See the module docstring."""

    def __init__(
        self,
        clients: AWSClients,
        cluster_name: str,
        clock: Clock,
        *,
        refresh: timedelta = DEFAULT_REFRESH,
    ) -> None:
        self._clients = clients
        self.cluster_name = cluster_name
        self._clock = clock
        self._refresh = refresh
        self._version: tuple[str, datetime] | None = None
        self.upgrade_in_progress: Upgrade | None = None
        """The last upgrade this agent started, until EKS reports it finished."""

    def version(self) -> str:
        """The control plane's ``major.minor`` version (read again once ``refresh`` passed)."""
        now = self._clock.now()
        if self._version is None or now - self._version[1] >= self._refresh:
            self._version = (self._describe_version(), now)
        return self._version[0]

    def _describe_version(self) -> str:
        doing = f"reading the Kubernetes version of EKS cluster {self.cluster_name}"
        try:
            answer = aws_call(doing, self._clients.eks.describe_cluster, name=self.cluster_name)
        except AWSError as exc:
            raise ControlPlaneError(str(exc), retryable=exc.retryable) from exc
        return str(answer["cluster"]["version"])

    def upgrade(self, version: str) -> Upgrade:
        """Ask EKS to move the control plane to ``version``; the accepted upgrade.

        Raises :class:`ControlPlaneError` when EKS refuses (e.g. an update already in
        progress, or a version it does not offer)."""
        doing = f"upgrading EKS cluster {self.cluster_name} to Kubernetes {version}"
        try:
            answer = aws_call(
                doing,
                self._clients.eks.update_cluster_version,
                name=self.cluster_name,
                version=version,
            )
        except AWSError as exc:
            raise ControlPlaneError(str(exc), retryable=exc.retryable) from exc
        started = _upgrade(answer["update"], version)
        self.upgrade_in_progress = started
        return started

    def follow(self) -> Upgrade | None:
        """EKS's current status of the upgrade in progress (None when there is none); once it
        finished, the version is read again at the next :meth:`version`."""
        current = self.upgrade_in_progress
        if current is None:
            return None
        doing = f"following the upgrade {current.id} of EKS cluster {self.cluster_name}"
        try:
            answer = aws_call(
                doing,
                self._clients.eks.describe_update,
                name=self.cluster_name,
                updateId=current.id,
            )
        except AWSError as exc:
            raise ControlPlaneError(str(exc), retryable=exc.retryable) from exc
        followed = _upgrade(answer["update"], current.version)
        if followed.finished:
            self.upgrade_in_progress = None
            self._version = None
        else:
            self.upgrade_in_progress = followed
        return followed


def _upgrade(update: dict[str, object], version: str) -> Upgrade:
    raw_errors = update.get("errors") or []
    errors = tuple(
        f"{e.get('errorCode', '')}: {e.get('errorMessage', '')}"
        for e in raw_errors  # type: ignore[attr-defined]
        if isinstance(e, dict)
    )
    return Upgrade(str(update["id"]), version, str(update["status"]), errors)
