"""What a context sends as ``Authorization: Bearer``, and what to say when the API refuses it.

In order: the token in the context's ``tokenFile``, or in the environment variable its
``tokenEnv`` names (automation tokens); else the ID token ``driftwave login`` stored, refreshed
(the refresh_token grant, :func:`driftwave.client.oidc.refresh`) when it has expired or expires
within :data:`SKEW`, the new tokens written back to the config file. A context with none of them
sends nothing (a loopback API without authentication answers; any other says 401, and the
command says to sign in).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from driftwave.client import config as files
from driftwave.client.config import Context, Credentials, OidcSettings
from driftwave.client.errors import ClientError, NotSignedIn

SKEW = timedelta(seconds=30)
"""An ID token expiring within this is refreshed first."""
Refresher = Callable[[OidcSettings, str], Credentials]
"""Renews credentials with a refresh token (:func:`driftwave.client.oidc.refresh`)."""


def login_hint(context: Context) -> str:
    """The command that signs in to ``context``."""
    return f"run driftwave login --context {context.name}"


class Bearer:
    """The bearer token of ``context`` (module docstring); refreshed credentials are saved to
    the config file at ``path``."""

    def __init__(
        self,
        context: Context,
        path: Path,
        refresher: Refresher,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._context = context
        self._path = path
        self._refresher = refresher
        self._now = now
        self._token: str | None = None

    def token(self) -> str | None:
        """The token to send (None: nothing to send); :class:`NotSignedIn` when the context's
        token cannot be had."""
        if self._token is None:
            self._token = self._find()
        return self._token or None

    def _find(self) -> str:
        context = self._context
        if context.token_file is not None:
            try:
                return Path(context.token_file).read_text(encoding="utf-8").strip()
            except OSError as exc:
                raise ClientError(
                    f"context {context.name}: cannot read tokenFile {context.token_file}: "
                    f"{exc.strerror}"
                ) from exc
        if context.token_env is not None:
            value = os.environ.get(context.token_env, "").strip()
            if not value:
                raise NotSignedIn(
                    f"not signed in: context {context.name} takes its token from "
                    f"${context.token_env}, which is not set"
                )
            return value
        if context.user is not None:
            return self._id_token(context.user)
        if context.oidc is not None:
            raise NotSignedIn(f"not signed in: {login_hint(context)}")
        return ""

    def _id_token(self, user: Credentials) -> str:
        if not _expired(user, self._now()):
            return user.id_token
        context = self._context
        if context.oidc is None or not user.refresh_token:
            raise NotSignedIn(f"not signed in: the sign-in has expired: {login_hint(context)}")
        try:
            renewed = self._refresher(context.oidc, user.refresh_token)
        except ClientError as exc:
            raise NotSignedIn(
                f"not signed in: the sign-in has expired and could not be renewed ({exc}): "
                f"{login_hint(context)}"
            ) from exc
        store(self._path, context.name, renewed)
        return renewed.id_token

    def refused(self, message: str) -> str:
        """What to say when the API answered 401 with ``message``."""
        context = self._context
        if context.token_file is not None or context.token_env is not None:
            where = (
                f"tokenFile {context.token_file}"
                if context.token_file is not None
                else f"${context.token_env}"
            )
            return f"token refused: {message} (the token of context {context.name}, from {where})"
        if context.user is not None:
            return f"not signed in: the API refused the sign-in ({message}): {login_hint(context)}"
        return "not signed in: run driftwave login"


def _expired(user: Credentials, now: datetime) -> bool:
    if user.expiry is None:
        return False
    try:
        expiry = datetime.fromisoformat(user.expiry.replace("Z", "+00:00"))
    except ValueError:
        return True
    return expiry - SKEW <= now


def store(path: Path, name: str, user: Credentials) -> None:
    """Write ``user`` as the credentials of context ``name`` in the config at ``path``."""
    config = files.load(path)
    context = config.named(name, path)
    config.put(context.model_copy(update={"user": user}))
    files.save(config, path)
