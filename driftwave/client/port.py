"""What the fleet commands ask of the fleet (:class:`FleetPort`), in the REST API's typed
documents, whichever way the fleet is reached:

* embedded (:class:`~driftwave.client.embedded.EmbeddedPort`): the fleet's service layer over
  the database of ``DRIFTWAVE_DATABASE_URL``, acting as the OS user marked ``(embedded)``;
* distributed (:class:`~driftwave.client.remote.RemotePort`): the fleet's REST API named by a
  context of the config file, acting as the identity its credentials prove (roles apply).

Both answer the same documents for the same fleet, so a command prints the same whichever
serves it; :func:`dump` turns a document into what ``-o json`` prints (the fields the service
gave, nothing added).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from datetime import datetime

    from pydantic import BaseModel

    from fleet.api.documents import ApplyDocument, PlanDocument
    from fleet.api.tokens import CreatedTokenDocument, CreateTokenRequest, TokenDocument
    from fleet.documents.audit import AuditEntry
    from fleet.documents.clusters import ClusterDocument
    from fleet.documents.history import ClusterHistory
    from fleet.documents.rollouts import (
        CommandResult,
        RolloutStarted,
        RolloutStatus,
        RolloutSummary,
    )
    from fleet.domain.fleet import Fleet
    from fleet.domain.release import Release
    from fleet.service.reads.audit_chain import AuditVerification

Command = Literal["pause", "resume", "abort", "rollback"]
"""The operator's commands on a rollout besides ``approve``."""


class FleetPort(Protocol):
    """The fleet as the commands use it. Every method raises
    :class:`~driftwave.client.errors.ClientError` (or a subclass) with the message to print
    when the fleet refuses or cannot do it; nothing changes then."""

    mode: Literal["embedded", "distributed"]
    """How the fleet is reached."""

    def apply_fleet(self, fleet: Fleet, reason: str | None) -> ApplyDocument:
        """Store ``fleet`` (added, changed and removed clusters audited with ``reason``)."""

    def clusters(self, fleet: str | None) -> list[ClusterDocument]:
        """The active clusters of every applied fleet (or of ``fleet``)."""

    def plan(self, release: Release, at: datetime | None) -> PlanDocument:
        """How ``release`` would roll through its fleet as last applied, as of ``at`` (None:
        now), with its wave times learnt from the fleet's finished waves."""

    def start(self, release: Release, queue: bool) -> RolloutStarted:
        """Start rolling ``release`` (queued behind live rollouts holding its clusters when
        ``queue``)."""

    def status(self, rollout: str) -> RolloutStatus:
        """Everything about one rollout."""

    def rollouts(self, active: bool, limit: int) -> list[RolloutSummary]:
        """The newest ``limit`` rollouts, oldest first (only those not finished when
        ``active``)."""

    def command(self, name: Command, rollout: str) -> CommandResult:
        """Pause, resume, abort or roll back ``rollout``."""

    def approve(self, rollout: str, ring: str, comment: str) -> CommandResult:
        """Approve ``ring``, the ring ``rollout`` waits for."""

    def audit(self, rollout: str) -> list[AuditEntry]:
        """The rollout's whole audit trail, oldest first."""

    def cluster_history(self, name: str, fleet: str | None) -> ClusterHistory:
        """Every step any rollout took on cluster ``name`` (of ``fleet``), newest first."""

    def verify_audit(self) -> AuditVerification:
        """The audit's hash chain walked: intact, or the first row changed or removed."""

    def create_token(self, request: CreateTokenRequest) -> CreatedTokenDocument:
        """A new token for automation, with its secret (shown this once)."""

    def tokens(self) -> list[TokenDocument]:
        """Every token for automation (never a secret nor a hash)."""

    def revoke_token(self, name: str) -> TokenDocument:
        """Revoke token ``name`` (again: nothing changes)."""

    def actor(self) -> str:
        """Who the fleet records as acting for this port (the embedded user, or the API's
        name for the credentials)."""


def dump(document: BaseModel, *, drop: tuple[str, ...] = ("warnings",)) -> Any:
    """What ``-o json`` prints of ``document``: the fields it was given (camelCase, as the
    service and the API write them), less ``drop`` (the API's manifest warnings, printed on
    stderr instead)."""
    return document.model_dump(mode="json", exclude_unset=True, exclude=set(drop))


def dump_all(documents: list[Any]) -> list[Any]:
    """:func:`dump` of each document of a list."""
    return [dump(d) for d in documents]
