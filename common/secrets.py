"""The port for reading a secret (the fleet's ``secretsmanager:`` credentials references): what
the fleet calls, what the agent's AWS adapter (:class:`agent.cloud.aws.secrets.SecretReader`)
implements, and the error it raises.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol


class SecretUnreadable(Exception):
    """A secret could not be read; the message says why (the adapter's own error is the cause)."""


class Secrets(Protocol):
    """Reads a secret by its ARN, as the caller or through an account's role."""

    def read(self, arn: str, *, role_arn: str | None = None, external_id: str | None = None) -> str:
        """The secret's value; raises :class:`SecretUnreadable`."""
        ...


OpenSecrets = Callable[[], Secrets]
"""Makes a :class:`Secrets` reader, called on the first secret a process reads (the composition
root passes :func:`agent.cloud.aws.open_secret_reader`)."""
