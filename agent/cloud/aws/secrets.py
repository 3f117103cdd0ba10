"""Reading a secret from AWS Secrets Manager, in the secret's own account and region.

The fleet keeps each agent's bearer token in Secrets Manager (``credentialsRef:
secretsmanager:ARN``). :class:`SecretReader` reads it with GetSecretValue, as the caller or
through the member account's role (:class:`~agent.cloud.aws.sts.AssumedRoles`), in the region
the ARN names, and keeps each value for five minutes so that calling an agent does not call
Secrets Manager each time. It implements the fleet's port (:class:`common.secrets.Secrets`):
a failed read raises :class:`~common.secrets.SecretUnreadable` with the AWS error as its cause.
"""

from __future__ import annotations

import dataclasses
import threading
from datetime import datetime, timedelta

from agent.clock import Clock, SystemClock
from agent.cloud.aws.errors import AWSError, aws_call
from agent.cloud.aws.session import AWSClients
from agent.cloud.aws.sts import AssumedRoles
from common.secrets import SecretUnreadable

KEEP = timedelta(minutes=5)


def region_of(arn: str) -> str | None:
    """The region of an ARN (``arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME``)."""
    parts = arn.split(":")
    return parts[3] if len(parts) > 5 and parts[0] == "arn" and parts[3] else None


class SecretReader:
    """See the module docstring."""

    def __init__(self, base: AWSClients | None = None, clock: Clock | None = None) -> None:
        self._base = base if base is not None else AWSClients()
        self._clock = clock if clock is not None else SystemClock()
        self.roles = AssumedRoles(self._base, self._clock)
        self._kept: dict[tuple[str, str | None], tuple[datetime, str]] = {}
        self._lock = threading.Lock()

    def read(self, arn: str, *, role_arn: str | None = None, external_id: str | None = None) -> str:
        """The secret's string value; raises SecretUnreadable (from the AWSError)."""
        try:
            return self._read(arn, role_arn, external_id)
        except AWSError as exc:
            raise SecretUnreadable(str(exc)) from exc

    def _read(self, arn: str, role_arn: str | None, external_id: str | None) -> str:
        key = (arn, role_arn)
        now = self._clock.now()
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None and now - kept[0] < KEEP:
                return kept[1]
        region = region_of(arn)
        if role_arn:
            clients = self.roles.clients(role_arn, external_id, region)
        elif region and region != self._base.region:
            clients = AWSClients(dataclasses.replace(self._base.config, region=region))
        else:
            clients = self._base
        answer = aws_call(
            f"reading secret {arn}", clients.client("secretsmanager").get_secret_value, SecretId=arn
        )
        value = str(answer.get("SecretString") or "")
        with self._lock:
            self._kept[key] = (now, value)
        return value
