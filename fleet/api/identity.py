"""Who a request is: every request of the fleet API resolves to one :class:`~fleet.api.rbac.Grant`
from its authentication alone (no header or body names an actor).

:class:`Authenticator` is the API's sign-on state, built once by the process and passed to
:func:`fleet.api.app.create_app` (nothing global). With authentication on, a request's
``Authorization: Bearer <token>`` is, in this order:

* an OIDC ID token (a compact JWT, with ``--auth-config``'s ``oidc``): verified by
  :class:`~fleet.api.oidc.OidcVerifier`; the person's groups map to a role and rings
  (:meth:`~fleet.api.authconfig.AuthConfig.grant_for`), and a person in no mapped group gets 403
  listing their groups; actions are audited under the ``usernameClaim``;
* a token of the tokens file (``--tokens-file``, or the single ``--token-file`` token, audited
  as ``api-token``);
* a token for automation in the database (:mod:`fleet.service.commands.tokens`): an expired or
  revoked
  one gets 401 saying so (only a caller holding its secret can learn that).

Anything else gets 401 without saying more. With authentication off (a loopback API started
without any of these) every request is :data:`ANONYMOUS`, an admin audited as
``anonymous (loopback, no authentication)``, whatever it sends.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from common.auth import AuthConfigError, hash_token
from fleet.api.authconfig import AuthConfig
from fleet.api.oidc import IssuerUnavailable, OidcError, OidcVerifier, looks_like_jwt
from fleet.api.rbac import AccessControl, Grant, actor_problem
from fleet.service.commands.tokens import TokenPolicy, check_token
from fleet.service.context import FleetContext

ANONYMOUS = Grant("anonymous (loopback, no authentication)", "admin", None, source="none")
"""The grant of every request when authentication is off (loopback only)."""
UNAUTHORIZED = "a known bearer token is required: send Authorization: Bearer <token>"


class AuthRefused(Exception):
    """A request is refused: ``status`` (401, 403 or 503) and why."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        self.message = message
        super().__init__(message)


def bearer(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header (None: no bearer token)."""
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


@dataclass
class Authenticator:
    """The API's ways of knowing who a request is (module docstring). ``enabled`` is false
    only for a loopback API started without tokens or an auth config."""

    ctx: FleetContext
    access: AccessControl | None = None
    config: AuthConfig | None = None
    verifier: OidcVerifier | None = None
    client_secret: str | None = field(default=None, repr=False)
    """The OIDC client's secret (``DRIFTWAVE_OIDC_CLIENT_SECRET``) when it is confidential."""

    @property
    def enabled(self) -> bool:
        """Whether requests must authenticate."""
        return self.access is not None or self.config is not None

    @property
    def policy(self) -> TokenPolicy:
        """How long new tokens for automation may live."""
        return self.config.tokens if self.config is not None else TokenPolicy()

    def identify(self, authorization: str | None) -> Grant:
        """The grant of a request carrying ``authorization``; :class:`AuthRefused` saying why
        it is not accepted."""
        if not self.enabled:
            return ANONYMOUS
        token = bearer(authorization)
        if token is None:
            raise AuthRefused(401, UNAUTHORIZED)
        if self.verifier is not None and looks_like_jwt(token):
            return self._person(token)
        try:
            token_hash = hash_token(token)
        except AuthConfigError as exc:
            raise AuthRefused(401, UNAUTHORIZED) from exc
        if self.access is not None:
            grant = self.access.identify(authorization)
            if grant is not None:
                return grant
        checked = check_token(self.ctx, token_hash)
        if checked is None:
            raise AuthRefused(401, UNAUTHORIZED)
        if checked.refused is not None:
            raise AuthRefused(401, checked.refused)
        info = checked.info
        rings = frozenset(info.rings) if info.rings is not None else None
        return Grant(info.name, info.role, rings, source="token")

    def _person(self, token: str) -> Grant:
        assert self.verifier is not None
        assert self.config is not None
        try:
            person = self.verifier.verify(token)
        except IssuerUnavailable as exc:
            raise AuthRefused(503, f"the OIDC issuer cannot be reached: {exc}") from exc
        except OidcError as exc:
            raise AuthRefused(401, str(exc)) from exc
        problem = actor_problem(person.name)
        if problem is not None:
            claim = self.verifier.settings.username_claim
            raise AuthRefused(401, f"ID token's {claim} claim cannot name an actor: {problem}")
        grant = self.config.grant_for(person.name, person.groups)
        if grant is None:
            theirs = ", ".join(sorted(person.groups)) or "none"
            mapped = ", ".join(g.group for g in self.config.groups)
            raise AuthRefused(
                403,
                f"{person.name}: no group grants a role (their groups: {theirs}; "
                f"groups with a role: {mapped})",
            )
        return grant

    def approvers(self, ring: str) -> list[str]:
        """Who may approve ``ring``: the tokens file's names and, with OIDC, the groups
        (``group:NAME``)."""
        names = self.access.approvers(ring) if self.access is not None else []
        if self.config is not None and self.config.oidc is not None:
            names += [f"group:{g}" for g in self.config.mapped_groups(ring)]
        return names

    def people(self) -> dict[str, list[str]]:
        """The tokens file's names by role and, with OIDC, the groups by role."""
        found = self.access.people() if self.access is not None else {}
        if self.config is not None and self.config.oidc is not None:
            for g in self.config.groups:
                found.setdefault(g.role, []).append(f"group:{g.group}")
        return found
