"""Resolving an agent's credentials reference (``spec.clusters[].agent.credentialsRef``) to the
bearer token the fleet presents to that cluster's agent.

A Fleet manifest never holds a token, only where to read it:

* ``env:NAME``: the environment variable ``NAME`` of the process calling the agent (the
  worker);
* ``file:PATH``: the first line of a file (a mounted Kubernetes Secret, a file readable only by
  the worker's user);
* ``secretsmanager:ARN``: an AWS Secrets Manager secret, read through the AWS adapters (not
  available yet: resolving one is a clear error, never a silent empty token).
"""

from __future__ import annotations

import os
from pathlib import Path


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


def resolve_token(reference: str, cluster: str) -> str:
    """The bearer token a reference points at; raises :class:`CredentialsError`."""
    problem = check_reference(reference)
    if problem:
        raise CredentialsError(f"cluster {cluster}: credentialsRef {reference!r} {problem}")
    scheme, _, rest = reference.partition(":")
    if scheme == "env":
        token = os.environ.get(rest, "")
        if not token:
            raise CredentialsError(
                f"cluster {cluster}: credentialsRef {reference}: the environment variable "
                f"{rest} is not set in this process (set it where the workers run)"
            )
        return token
    if scheme == "file":
        try:
            lines = Path(rest).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise CredentialsError(
                f"cluster {cluster}: credentialsRef {reference}: cannot read the file: "
                f"{exc.strerror}"
            ) from exc
        token = lines[0].strip() if lines else ""
        if not token:
            raise CredentialsError(f"cluster {cluster}: credentialsRef {reference}: empty file")
        return token
    raise CredentialsError(
        f"cluster {cluster}: credentialsRef {reference}: Secrets Manager references need the "
        "AWS adapters, which this build does not have yet; use env: or file:"
    )
