"""boto3 clients for one AWS account and region, made lazily and shared.

:class:`AWSConfig` says where to reach AWS: the region, the named profile and the endpoint.
boto3 reads the rest itself, as the AWS CLI does: credentials from the environment, the shared
files, IRSA's web identity token or EKS Pod Identity; ``AWS_ENDPOINT_URL`` (and the
per-service ``AWS_ENDPOINT_URL_EC2`` style) when ``endpoint_url`` is not given. Retries use
botocore's ``standard`` mode: throttling and transient errors are retried with jittered
exponential backoff, up to ``max_attempts`` calls in all.

:class:`AWSClients` takes an optional ``session_factory`` so that another module (STS
AssumeRole) can hand it sessions whose credentials it refreshes: the factory is called again
whenever :meth:`AWSClients.refresh` is, and the clients are then made anew.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import boto3
from botocore.config import Config

DEFAULT_MAX_ATTEMPTS = 5
"""Calls per request in all (the first and four retries), as botocore's standard mode counts."""

USER_AGENT = "driftwave-agent"


@dataclass(frozen=True, slots=True)
class AWSConfig:
    """Where to reach AWS. None leaves the choice to boto3's own configuration chain."""

    region: str | None = None
    profile: str | None = None
    endpoint_url: str | None = None
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    connect_timeout: float = 5.0
    read_timeout: float = 30.0

    def botocore_config(self) -> Config:
        """The client configuration: standard retries, timeouts and our user agent."""
        return Config(
            retries={"mode": "standard", "max_attempts": self.max_attempts},
            connect_timeout=self.connect_timeout,
            read_timeout=self.read_timeout,
            user_agent_extra=USER_AGENT,
        )


class AWSClients:
    """Lazily made boto3 clients (``ec2``, ``ssm``, ``eks``, ``sqs``, ``sts``, ...) sharing one
    session; thread-safe. See the module docstring."""

    def __init__(
        self,
        config: AWSConfig | None = None,
        *,
        session_factory: Callable[[], boto3.session.Session] | None = None,
    ) -> None:
        self.config = config if config is not None else AWSConfig()
        self._factory = session_factory or self._default_session
        self._lock = threading.Lock()
        self._session: boto3.session.Session | None = None
        self._clients: dict[str, Any] = {}

    def _default_session(self) -> boto3.session.Session:
        return boto3.session.Session(
            profile_name=self.config.profile, region_name=self.config.region
        )

    @property
    def session(self) -> boto3.session.Session:
        """The boto3 session the clients are made from."""
        with self._lock:
            if self._session is None:
                self._session = self._factory()
            return self._session

    @property
    def region(self) -> str:
        """The region the clients talk to; a clear error when none is configured."""
        region = self.config.region or self.session.region_name
        if not region:
            raise ValueError(
                "no AWS region: pass --region, set AWS_REGION, or name one in the profile"
            )
        return str(region)

    def client(self, service: str) -> Any:
        """The client for ``service`` (made on first use)."""
        session = self.session
        region = self.region
        with self._lock:
            made = self._clients.get(service)
            if made is None:
                made = session.client(
                    service,
                    region_name=region,
                    endpoint_url=self.config.endpoint_url,
                    config=self.config.botocore_config(),
                )
                self._clients[service] = made
            return made

    def refresh(self) -> None:
        """Drop the session and clients; the next call makes them anew from the factory."""
        with self._lock:
            self._session = None
            self._clients.clear()

    @property
    def ec2(self) -> Any:
        """The EC2 client."""
        return self.client("ec2")

    @property
    def ssm(self) -> Any:
        """The SSM client."""
        return self.client("ssm")

    @property
    def eks(self) -> Any:
        """The EKS client."""
        return self.client("eks")

    @property
    def sqs(self) -> Any:
        """The SQS client."""
        return self.client("sqs")

    @property
    def sts(self) -> Any:
        """The STS client."""
        return self.client("sts")
