"""Sessions in other AWS accounts through STS AssumeRole (with an ExternalId), cached.

The fleet reaches each member account through the role its Fleet manifest names
(``spec.accounts[].roleArn`` / ``externalId``). :class:`AssumedRoles` assumes a role once and
hands out boto3 sessions on its temporary credentials until five minutes before they expire;
the next request then assumes the role again, so a long-running worker never holds expired
credentials. Thread-safe.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import boto3

from agent.clock import Clock, SystemClock
from agent.cloud.aws.errors import aws_call
from agent.cloud.aws.session import AWSClients

REFRESH_BEFORE = timedelta(minutes=5)
DURATION_SECONDS = 3600


@dataclass(frozen=True)
class Assumed:
    """Temporary credentials of one role."""

    access_key: str
    secret_key: str
    token: str
    expires: datetime


class AssumedRoles:
    """See the module docstring. ``base`` is the caller's own identity (its clients)."""

    def __init__(
        self, base: AWSClients, clock: Clock | None = None, session_name: str = "driftwave-fleet"
    ) -> None:
        self._base = base
        self._clock = clock if clock is not None else SystemClock()
        self._session_name = session_name
        self._held: dict[tuple[str, str | None], Assumed] = {}
        self._lock = threading.Lock()

    def credentials(self, role_arn: str, external_id: str | None = None) -> Assumed:
        """The role's credentials, assumed again when within five minutes of expiry.

        Raises AWSError (e.g. AWSAccessDenied when the trust policy or ExternalId refuses)."""
        key = (role_arn, external_id)
        with self._lock:
            held = self._held.get(key)
            if held is not None and self._clock.now() < held.expires - REFRESH_BEFORE:
                return held
        request = {
            "RoleArn": role_arn,
            "RoleSessionName": self._session_name,
            "DurationSeconds": DURATION_SECONDS,
        }
        if external_id:
            request["ExternalId"] = external_id
        answer = aws_call(f"assuming {role_arn}", self._base.sts.assume_role, **request)
        raw = answer["Credentials"]
        expires = raw["Expiration"]
        if expires.tzinfo is None:
            expires = expires.replace(tzinfo=UTC)
        assumed = Assumed(raw["AccessKeyId"], raw["SecretAccessKey"], raw["SessionToken"], expires)
        with self._lock:
            self._held[key] = assumed
        return assumed

    def clients(
        self, role_arn: str, external_id: str | None = None, region: str | None = None
    ) -> AWSClients:
        """Clients acting as the role (in ``region``, else the base's)."""
        assumed = self.credentials(role_arn, external_id)
        target_region = region or self._base.region
        config = dataclasses.replace(self._base.config, region=target_region, profile=None)

        def session() -> boto3.session.Session:
            return boto3.session.Session(
                aws_access_key_id=assumed.access_key,
                aws_secret_access_key=assumed.secret_key,
                aws_session_token=assumed.token,
                region_name=target_region,
            )

        return AWSClients(config, session_factory=session)
