"""The fleet port over the fleet's service layer (:mod:`fleet.service`): the embedded mode.

The database is the one ``DRIFTWAVE_DATABASE_URL`` names (default the SQLite file
``.driftwave/fleet.db``); every change is recorded as the OS user marked ``(embedded)``
(:func:`embedded_actor`), so the audit says that no API, and no role, stood between. The
services return the fleet's documents (:mod:`fleet.documents`), the same the remote port
reads from the API; a service's refusal becomes a :class:`~driftwave.client.errors.ClientError`
carrying its message.
"""

from __future__ import annotations

import getpass
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Literal, TypeVar

from driftwave.client.errors import ClientError
from driftwave.client.port import Command

if TYPE_CHECKING:
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
    from fleet.service.context import FleetContext
    from fleet.service.reads.audit_chain import AuditVerification

T = TypeVar("T")


def embedded_actor() -> str:
    """The OS user, marked embedded: ``alice (embedded)``."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"{user} (embedded)"


@contextmanager
def service_errors() -> Iterator[None]:
    """Turn the services' refusals and errors into :class:`ClientError`.

    The reads' own "no such rollout" and "no such cluster" are classes of the read modules
    (:mod:`fleet.service.reads.queries`, :mod:`fleet.service.reads.history`); only a call that
    imported a module can get its error, so they are looked up among the modules already loaded
    (:func:`_loaded_errors`), and a call imports only the service it runs."""
    from fleet.domain.errors import DomainError
    from fleet.service.commands.refusals import CommandForbidden, CommandRefused
    from fleet.service.errors import ReleaseNameTaken, ServiceError

    try:
        yield
    except ReleaseNameTaken as exc:
        raise ClientError(f"{exc} (give the changed release a new metadata.name)") from exc
    except Exception as exc:
        if isinstance(exc, _loaded_errors(_CLUSTER_ERRORS)):
            raise ClientError(str(exc.args[0])) from exc
        refusals = (CommandRefused, CommandForbidden, ServiceError, DomainError)
        if isinstance(exc, (*refusals, *_loaded_errors(_ROLLOUT_ERRORS))):
            raise ClientError(str(exc)) from exc
        raise


_CLUSTER_ERRORS = (
    ("fleet.service.reads.history", "ClusterUnknown"),
    ("fleet.service.reads.history", "ClusterAmbiguous"),
)
_ROLLOUT_ERRORS = (("fleet.service.reads.queries", "RolloutNotFound"),)


def _loaded_errors(names: tuple[tuple[str, str], ...]) -> tuple[type[BaseException], ...]:
    """The exception classes ``names`` (module, class) of the modules already imported."""
    found: list[type[BaseException]] = []
    for module, name in names:
        loaded = sys.modules.get(module)
        if loaded is not None:
            found.append(getattr(loaded, name))
    return tuple(found)


class EmbeddedPort:
    """:class:`~driftwave.client.port.FleetPort` over ``ctx`` (the fleet database), acting as
    ``actor``."""

    mode: Literal["embedded", "distributed"] = "embedded"

    def __init__(self, ctx: FleetContext, actor: str) -> None:
        self._ctx = ctx
        self._actor = actor

    def actor(self) -> str:
        """The OS user marked embedded."""
        return self._actor

    def _run(self, call: Callable[[], T]) -> T:
        with service_errors():
            return call()

    def apply_fleet(self, fleet: Fleet, reason: str | None) -> ApplyDocument:
        """Store the fleet (:func:`fleet.service.commands.fleets.apply_fleet`)."""
        from fleet.api.documents import ApplyDocument
        from fleet.service.commands.fleets import apply_fleet

        result = self._run(lambda: apply_fleet(self._ctx, fleet, self._actor, reason))
        return ApplyDocument.model_validate({**result.as_document(), "warnings": []})

    def clusters(self, fleet: str | None) -> list[ClusterDocument]:
        """The active clusters (:func:`fleet.service.commands.fleets.list_clusters`)."""
        from fleet.service.commands.fleets import list_clusters

        return self._run(lambda: list_clusters(self._ctx, fleet))

    def plan(self, release: Release, at: datetime | None) -> PlanDocument:
        """Plan against the stored fleet
        (:func:`fleet.service.scheduling.planning.plan_stored`)."""
        from fleet.api.documents import PlanDocument
        from fleet.domain.manifests import Loaded, release_fleet_findings
        from fleet.domain.model import release_info
        from fleet.service.commands.fleets import stored_fleet
        from fleet.service.errors import Unknown
        from fleet.service.scheduling.planning import plan_stored

        name = release.spec.fleet
        try:
            fleet = stored_fleet(self._ctx, name)
        except Unknown:
            raise ClientError(
                f"fleet {name!r} has not been applied: pass --fleet FLEET.yaml or run "
                "driftwave fleet apply FLEET.yaml"
            ) from None
        info = release_info(release)
        cross = release_fleet_findings(Loaded(release, "release", 0, []), info, fleet)
        errors = [f for f in cross if f.severity == "error"]
        if errors:
            raise ClientError("; ".join(f"{f.path}: {f.message}" for f in errors))
        when = at or self._ctx.now()

        document = self._run(lambda: plan_stored(self._ctx, fleet, info, when).as_dict())
        notices = [{"path": f.path, "message": f.message} for f in cross]
        return PlanDocument.model_validate({**document, "warnings": notices})

    def start(self, release: Release, queue: bool) -> RolloutStarted:
        """Start the rollout (:func:`fleet.service.commands.rollouts.start_rollout`)."""
        from fleet.service.commands.rollouts import start_rollout

        return self._run(lambda: start_rollout(self._ctx, release, self._actor, queue=queue))

    def status(self, rollout: str) -> RolloutStatus:
        """The rollout's status (:func:`fleet.service.reads.queries.rollout_status`)."""
        from fleet.service.reads.queries import rollout_status

        return self._run(lambda: rollout_status(self._ctx, rollout))

    def rollouts(self, active: bool, limit: int) -> list[RolloutSummary]:
        """The rollouts (:func:`fleet.service.reads.rollouts.list_rollouts`)."""
        from fleet.service.reads.rollouts import list_rollouts

        return self._run(lambda: list_rollouts(self._ctx, active=active, limit=limit))

    def command(self, name: Command, rollout: str) -> CommandResult:
        """Pause, resume, abort or roll back (:mod:`fleet.service.commands.rollouts`)."""
        from fleet.service.commands import rollouts

        call = {
            "pause": rollouts.pause,
            "resume": rollouts.resume,
            "abort": rollouts.abort,
            "rollback": rollouts.rollback,
        }[name]
        return self._run(lambda: call(self._ctx, rollout, self._actor))

    def approve(self, rollout: str, ring: str, comment: str) -> CommandResult:
        """Approve the waiting ring (:func:`fleet.service.commands.rollouts.approve`)."""
        from fleet.service.commands import rollouts

        return self._run(lambda: rollouts.approve(self._ctx, rollout, self._actor, ring, comment))

    def audit(self, rollout: str) -> list[AuditEntry]:
        """The audit trail (:func:`fleet.service.reads.queries.audit_trail`)."""
        from fleet.service.reads.queries import audit_trail

        return self._run(lambda: audit_trail(self._ctx, rollout))

    def cluster_history(self, name: str, fleet: str | None) -> ClusterHistory:
        """The cluster's steps (:func:`fleet.service.reads.history.cluster_history`)."""
        from fleet.service.reads.history import cluster_history

        return self._run(lambda: cluster_history(self._ctx, name, fleet))

    def verify_audit(self) -> AuditVerification:
        """The chain walked (:func:`fleet.service.reads.audit_chain.verify_audit`)."""
        from fleet.service.reads.audit_chain import verify_audit

        return self._run(lambda: verify_audit(self._ctx))

    def create_token(self, request: CreateTokenRequest) -> CreatedTokenDocument:
        """A token made (:func:`fleet.service.commands.tokens.create_token`), its secret with it."""
        from fleet.api.tokens import CreatedTokenDocument, token_document
        from fleet.service.commands.tokens import create_token, parse_expiry

        try:
            lifetime = parse_expiry(request.expires_in) if request.expires_in else None
        except ValueError as exc:
            raise ClientError(f"--expires-in: {exc}") from exc
        made = self._run(
            lambda: create_token(
                self._ctx,
                request.name,
                request.role,
                actor=self._actor,
                rings=request.rings,
                expires_in=lifetime,
            )
        )
        shown = {**token_document(made.info, self._ctx.now()), "token": made.secret}
        return CreatedTokenDocument.model_validate(shown)

    def tokens(self) -> list[TokenDocument]:
        """The tokens (:func:`fleet.service.commands.tokens.list_tokens`)."""
        from fleet.api.tokens import TokenDocument, token_document
        from fleet.service.commands.tokens import list_tokens

        now = self._ctx.now()
        found = self._run(lambda: list_tokens(self._ctx))
        return [TokenDocument.model_validate(token_document(t, now)) for t in found]

    def revoke_token(self, name: str) -> TokenDocument:
        """The token revoked (:func:`fleet.service.commands.tokens.revoke_token`)."""
        from fleet.api.tokens import TokenDocument, token_document
        from fleet.service.commands.tokens import revoke_token

        revoked = self._run(lambda: revoke_token(self._ctx, name, actor=self._actor))
        return TokenDocument.model_validate(token_document(revoked, self._ctx.now()))
