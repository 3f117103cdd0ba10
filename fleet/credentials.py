"""Resolving an agent's credentials reference (``spec.clusters[].agent.credentialsRef``) to the
bearer token the fleet presents to that cluster's agent, and the TLS references of the same
entry (``caRef``, ``clientCertificateRef``, ``clientKeyRef``) to the PEM documents they name
(``whole``: the whole text, not only its first line).

A Fleet manifest never holds a token, only where to read it:

* ``env:NAME``: the environment variable ``NAME`` of the process calling the agent (the
  worker);
* ``file:PATH``: the first line of a file (a mounted Kubernetes Secret, a file readable only by
  the worker's user);
* ``secretsmanager:ARN``: an AWS Secrets Manager secret (its string value), read in the region
  the ARN names, through the cluster's account role (``spec.accounts[].roleArn`` with its
  ``externalId``, assumed with STS and cached) when the fleet gives one; values are kept for
  five minutes. The reader is a port (:class:`common.secrets.Secrets`): the composition root
  passes the AWS adapter's (:func:`agent.cloud.aws.open_secret_reader`), made on first use.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from common.secrets import OpenSecrets, Secrets, SecretUnreadable


class CredentialsError(ValueError):
    """A credentials reference is malformed or cannot be resolved; the message says which and
    what to do."""


SCHEMES = ("env", "file", "secretsmanager")


def check_reference(reference: str) -> str | None:
    """What is wrong with a credentials reference's syntax, or None when it is well formed."""
    scheme, sep, rest = reference.partition(":")
    if not sep or scheme not in SCHEMES or not rest:
        return "must be env:NAME, file:PATH or secretsmanager:ARN"
    return None


@dataclass(frozen=True)
class AccountAccess:
    """The role the fleet assumes in a cluster's account (from the Fleet's ``accounts``)."""

    role_arn: str
    external_id: str | None = None


def resolve_token(
    reference: str,
    cluster: str,
    *,
    account: AccountAccess | None = None,
    secrets: Secrets | None = None,
    field: str = "credentialsRef",
    whole: bool = False,
) -> str:
    """The bearer token a reference points at (``whole``: the whole document, for the PEM
    ones); raises :class:`CredentialsError` naming ``field``.

    ``secrets`` reads ``secretsmanager:`` references, as ``account``'s role when given; without
    it such a reference is a :class:`CredentialsError`."""
    problem = check_reference(reference)
    if problem:
        raise CredentialsError(f"cluster {cluster}: {field} {reference!r} {problem}")
    where = f"cluster {cluster}: {field} {reference}"
    scheme, _, rest = reference.partition(":")
    if scheme == "env":
        token = os.environ.get(rest, "")
        if not token:
            raise CredentialsError(
                f"{where}: the environment variable {rest} is not set in this process (set it "
                "where the workers run)"
            )
        return token
    if scheme == "file":
        try:
            text = Path(rest).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
            raise CredentialsError(f"{where}: cannot read the file: {why}") from exc
        lines = text.splitlines()
        token = text.strip() if whole else (lines[0].strip() if lines else "")
        if not token:
            raise CredentialsError(f"{where}: empty file")
        return token
    return _secret(rest, where, account, secrets)


def _secret(
    arn: str,
    where: str,
    account: AccountAccess | None,
    secrets: Secrets | None,
) -> str:
    if not arn.startswith("arn:") or ":secretsmanager:" not in arn:
        raise CredentialsError(
            f"{where}: not a Secrets Manager ARN "
            "(arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME)"
        )
    if secrets is None:
        raise CredentialsError(f"{where}: this process has no Secrets Manager reader")
    try:
        token = secrets.read(
            arn,
            role_arn=account.role_arn if account else None,
            external_id=account.external_id if account else None,
        )
    except SecretUnreadable as exc:
        raise CredentialsError(f"{where}: {exc}") from exc
    token = token.strip()
    if not token:
        raise CredentialsError(f"{where}: empty secret")
    return token


class TokenResolver:
    """Resolves references for one process, keeping one Secrets Manager reader (and with it the
    assumed roles and the values read) for its lifetime: ``secrets``, or the one ``open_secrets``
    makes on the first ``secretsmanager:`` reference."""

    def __init__(
        self, secrets: Secrets | None = None, *, open_secrets: OpenSecrets | None = None
    ) -> None:
        self._secrets = secrets
        self._open = open_secrets

    def __call__(
        self,
        reference: str,
        cluster: str,
        account: AccountAccess | None = None,
        *,
        field: str = "credentialsRef",
        whole: bool = False,
    ) -> str:
        """The token (or ``whole`` document) ``reference`` points at (see
        :func:`resolve_token`)."""
        if reference.startswith("secretsmanager:") and self._secrets is None and self._open:
            self._secrets = self._open()
        return resolve_token(
            reference, cluster, account=account, secrets=self._secrets, field=field, whole=whole
        )
