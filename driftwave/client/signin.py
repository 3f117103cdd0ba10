"""Where a context's people sign in: the context's own OIDC settings, else what its server
answers at ``GET /v1/auth/config`` (unauthenticated; :mod:`fleet.api.discovery`)."""

from __future__ import annotations

from pydantic import ValidationError

from driftwave.client.config import Context, OidcSettings, check_url
from driftwave.client.errors import ClientError
from driftwave.client.httpclient import httpx
from driftwave.client.remote import TIMEOUT, tls


def sign_in_settings(
    context: Context, transport: httpx.BaseTransport | None = None
) -> OidcSettings:
    """The issuer and client id ``context`` signs in with; :class:`ClientError` when neither
    the context nor its server names them."""
    if context.oidc is not None:
        return context.oidc
    from fleet.api.discovery import AuthDiscovery

    url = f"{context.server}/v1/auth/config"
    try:
        with httpx.Client(verify=tls(context), timeout=TIMEOUT, transport=transport) as http:
            response = http.get(url)
        response.raise_for_status()
        found = AuthDiscovery.model_validate(response.json())
    except (httpx.HTTPError, ValueError, ValidationError) as exc:
        raise ClientError(
            f"cannot learn where to sign in from {url} ({exc}): set it with driftwave config "
            f"set-context {context.name} --oidc-issuer URL --oidc-client-id ID"
        ) from exc
    if found.oidc is None:
        raise ClientError(
            f"the fleet API at {context.server} takes no OIDC sign-in (tokens only): give "
            f"context {context.name} a token with driftwave config set-context {context.name} "
            "--token-file FILE"
        )
    return OidcSettings(
        issuer=check_url(found.oidc.issuer, "the server's oidc.issuer"),
        client_id=found.oidc.client_id,
    )
