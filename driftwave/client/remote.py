"""The fleet port over the fleet's REST API (:mod:`fleet.api`): the distributed mode.

One httpx client per command, to the context's server: TLS verified against the context's CA
(else the system's), a timeout on every request (:data:`TIMEOUT`), the context's credentials as
``Authorization: Bearer`` (:class:`~driftwave.client.credentials.Bearer`: an automation token,
or the ID token of ``driftwave login``, refreshed when it has expired). Every answer is read
into the fleet's documents (:mod:`fleet.documents`, :mod:`fleet.api.documents`); an
error answer becomes :class:`~driftwave.client.errors.ApiError` with the API's message (401:
:class:`~driftwave.client.errors.NotSignedIn`, saying to sign in).
"""

from __future__ import annotations

import ssl
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, TypeVar
from urllib.parse import quote

from pydantic import BaseModel, ValidationError

from driftwave.client.errors import ApiError, ClientError, NotSignedIn
from driftwave.client.httpclient import httpx
from driftwave.client.port import Command

if TYPE_CHECKING:
    from driftwave.client.config import Context
    from driftwave.client.credentials import Bearer
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

M = TypeVar("M", bound=BaseModel)
TIMEOUT = httpx.Timeout(30.0, connect=10.0)
"""Seconds to connect, and to wait for each answer."""
AUDIT_PAGE = 10_000
"""Audit rows asked per request (the API's most)."""


def tls(context: Context) -> ssl.SSLContext | bool:
    """How the server's certificate is checked: against the context's CA file, else the
    system's trust store."""
    if context.certificate_authority is None:
        return True
    try:
        return ssl.create_default_context(cafile=context.certificate_authority)
    except (OSError, ssl.SSLError) as exc:
        raise ClientError(
            f"context {context.name}: certificateAuthority {context.certificate_authority} "
            f"cannot be used: {exc}"
        ) from exc


class RemotePort:
    """:class:`~driftwave.client.port.FleetPort` over the fleet API of ``context``."""

    mode: Literal["embedded", "distributed"] = "distributed"

    def __init__(
        self, context: Context, bearer: Bearer, transport: httpx.BaseTransport | None = None
    ) -> None:
        self._context = context
        self._bearer = bearer
        self._http = httpx.Client(
            base_url=context.server,
            verify=tls(context),
            timeout=TIMEOUT,
            transport=transport,
            headers={"Accept": "application/json"},
        )
        self._whoami: str | None = None

    def close(self) -> None:
        """Close the connections."""
        self._http.close()

    def _send(self, method: str, path: str, **kwargs: Any) -> Any:
        """The JSON answer of one request; :class:`ApiError` for an error answer."""
        headers = dict(kwargs.pop("headers", {}))
        token = self._bearer.token()
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        try:
            response = self._http.request(method, path, headers=headers, **kwargs)
        except httpx.HTTPError as exc:
            raise ClientError(
                f"cannot reach the fleet API at {self._context.server} (context "
                f"{self._context.name}): {exc or type(exc).__name__}"
            ) from exc
        if response.status_code == 401:
            raise NotSignedIn(self._bearer.refused(_message(response)))
        if response.status_code >= 400:
            raise ApiError(response.status_code, _message(response), _code(response))
        try:
            return response.json()
        except ValueError as exc:
            raise ClientError(
                f"the fleet API at {self._context.server} answered {method} {path} with "
                "something that is not JSON"
            ) from exc

    def _read(self, model: type[M], data: Any) -> M:
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(str(p) for p in problem["loc"])
            raise ClientError(
                f"the fleet API at {self._context.server} answered a {model.__name__} this "
                f"command cannot read ({where}: {problem['msg']}): is it another version?"
            ) from exc

    def actor(self) -> str:
        """The name the API records for these credentials (``GET /v1/whoami``)."""
        from fleet.api.documents import WhoAmI

        if self._whoami is None:
            self._whoami = self._read(WhoAmI, self._send("GET", "/v1/whoami")).name
        return self._whoami

    def apply_fleet(self, fleet: Fleet, reason: str | None) -> ApplyDocument:
        """``PUT /v1/fleets/{name}``."""
        from fleet.api.documents import ApplyDocument

        params = {"reason": reason} if reason is not None else {}
        data = self._send(
            "PUT", f"/v1/fleets/{_seg(fleet.name)}", json=fleet.to_manifest(), params=params
        )
        return self._read(ApplyDocument, data)

    def clusters(self, fleet: str | None) -> list[ClusterDocument]:
        """``GET /v1/fleets/{name}/clusters`` of ``fleet``, or of every fleet."""
        from fleet.api.documents import FleetsDocument
        from fleet.documents.clusters import ClustersDocument

        if fleet is not None:
            names = [fleet]
        else:
            names = self._read(FleetsDocument, self._send("GET", "/v1/fleets")).fleets
        found: list[ClusterDocument] = []
        for name in names:
            data = self._send("GET", f"/v1/fleets/{_seg(name)}/clusters")
            found.extend(self._read(ClustersDocument, data).clusters)
        return found

    def plan(self, release: Release, at: datetime | None) -> PlanDocument:
        """``POST /v1/plans``."""
        from fleet.api.documents import PlanDocument

        params = {"at": at.isoformat().replace("+00:00", "Z")} if at is not None else {}
        data = self._send("POST", "/v1/plans", json=release.to_manifest(), params=params)
        return self._read(PlanDocument, data)

    def start(self, release: Release, queue: bool) -> RolloutStarted:
        """``POST /v1/rollouts``."""
        from fleet.documents.rollouts import RolloutStarted

        body: dict[str, Any] = {"release": release.to_manifest(), "queue": True}
        data = self._send("POST", "/v1/rollouts", json=body if queue else release.to_manifest())
        return self._read(RolloutStarted, data)

    def status(self, rollout: str) -> RolloutStatus:
        """``GET /v1/rollouts/{id}``."""
        from fleet.documents.rollouts import RolloutStatus

        return self._read(RolloutStatus, self._send("GET", f"/v1/rollouts/{_seg(rollout)}"))

    def rollouts(self, active: bool, limit: int) -> list[RolloutSummary]:
        """``GET /v1/rollouts``."""
        from fleet.documents.rollouts import RolloutsDocument

        params = {"active": "true" if active else "false", "limit": str(min(limit, 1000))}
        data = self._send("GET", "/v1/rollouts", params=params)
        return self._read(RolloutsDocument, data).rollouts

    def command(self, name: Command, rollout: str) -> CommandResult:
        """``POST /v1/rollouts/{id}/{pause|resume|abort|rollback}``."""
        from fleet.documents.rollouts import CommandResult

        data = self._send("POST", f"/v1/rollouts/{_seg(rollout)}/{name}")
        return self._read(CommandResult, data)

    def approve(self, rollout: str, ring: str, comment: str) -> CommandResult:
        """``POST /v1/rollouts/{id}/approve``."""
        from fleet.documents.rollouts import CommandResult

        body = {"ring": ring, "comment": comment}
        data = self._send("POST", f"/v1/rollouts/{_seg(rollout)}/approve", json=body)
        return self._read(CommandResult, data)

    def audit(self, rollout: str) -> list[AuditEntry]:
        """``GET /v1/rollouts/{id}/audit``, page after page."""
        from fleet.documents.audit import AuditDocument

        entries: list[AuditEntry] = []
        after: int | None = None
        while True:
            params = {"limit": str(AUDIT_PAGE)} | ({"after": str(after)} if after else {})
            data = self._send("GET", f"/v1/rollouts/{_seg(rollout)}/audit", params=params)
            page = self._read(AuditDocument, data)
            entries.extend(page.entries)
            if len(page.entries) < AUDIT_PAGE or page.last_id is None:
                return entries
            after = page.last_id

    def cluster_history(self, name: str, fleet: str | None) -> ClusterHistory:
        """``GET /v1/clusters/{name}/history``."""
        from fleet.documents.history import ClusterHistory

        params = {"fleet": fleet} if fleet is not None else {}
        data = self._send("GET", f"/v1/clusters/{_seg(name)}/history", params=params)
        return self._read(ClusterHistory, data)

    def verify_audit(self) -> AuditVerification:
        """``GET /v1/audit/verify``."""
        from fleet.service.reads.audit_chain import AuditVerification

        return self._read(AuditVerification, self._send("GET", "/v1/audit/verify"))

    def create_token(self, request: CreateTokenRequest) -> CreatedTokenDocument:
        """``POST /v1/tokens``."""
        from fleet.api.tokens import CreatedTokenDocument

        body = request.model_dump(mode="json", by_alias=True)
        return self._read(CreatedTokenDocument, self._send("POST", "/v1/tokens", json=body))

    def tokens(self) -> list[TokenDocument]:
        """``GET /v1/tokens``."""
        from fleet.api.tokens import TokensDocument

        return self._read(TokensDocument, self._send("GET", "/v1/tokens")).tokens

    def revoke_token(self, name: str) -> TokenDocument:
        """``DELETE /v1/tokens/{name}``."""
        from fleet.api.tokens import TokenDocument

        return self._read(TokenDocument, self._send("DELETE", f"/v1/tokens/{_seg(name)}"))


def _seg(value: str) -> str:
    """``value`` as one path segment."""
    return quote(value, safe="")


def _error(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, dict) else {}


def _message(response: httpx.Response) -> str:
    """The API's message of an error answer (its status line when it sent none)."""
    message = _error(response).get("message")
    if isinstance(message, str) and message:
        return message
    return f"the fleet API answered {response.status_code} {response.reason_phrase}"


def _code(response: httpx.Response) -> str:
    code = _error(response).get("code")
    return code if isinstance(code, str) else ""
