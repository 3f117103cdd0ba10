"""``driftwave.io/v1alpha1`` Fleet: the rings, freezes, AWS accounts and clusters one control
plane rolls releases through.

Defaults: ``freezes``, ``accounts`` and ``clusters`` are empty; a cluster's ``labels`` are empty
and it has no maintenance windows (always open); a window's ``timeZone`` is ``UTC``. A
cluster's agent token never appears in a manifest: ``credentialsRef`` only says where to read it;
an agent off loopback is reached over https, verified against ``caRef`` (default: the system's
CAs), presenting ``clientCertificateRef`` / ``clientKeyRef`` when it asks for mutual TLS.
``notifications`` is empty (no webhook); a webhook with no ``events`` receives every event type,
and a webhook's bearer token is never in the manifest either (``secretRef``).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from common.addresses import is_loopback_url
from common.kubemodel import KubeModel, ObjectMeta, matching, rule_error
from common.schedules import cron_problem, parse_cron
from fleet.domain.fields import (
    DnsLabel,
    Duration,
    HttpUrl,
    Labels,
    Timestamp,
    TimeZone,
    duration_of,
    parse_time,
)

MAX_WINDOW = timedelta(days=7)
REGION = r"^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-[0-9]+$"
ACCOUNT_ID = r"^[0-9]{12}$"
EXTERNAL_ID = r"^[\w+=,.@:/-]{2,1224}$"
ROLE_ARN = re.compile(r"arn:aws(-cn|-us-gov|-iso|-iso-b)?:iam::([0-9]{12}):role/([\w+=,.@/-]+)")
CREDENTIALS_REF = re.compile(
    r"env:[A-Za-z_][A-Za-z0-9_]*"
    r"|file:\S.*"
    r"|secretsmanager:arn:aws(-cn|-us-gov|-iso|-iso-b)?:secretsmanager:[a-z0-9-]+:[0-9]{12}:"
    r"secret:\S+"
)


class Freeze(KubeModel):
    """``spec.freezes[]``: a period in which no new wave step starts (steps under way finish)."""

    start: Timestamp
    end: Timestamp
    reason: str = ""

    @model_validator(mode="after")
    def _ordered(self) -> Freeze:
        if parse_time(self.end) <= parse_time(self.start):
            raise rule_error(
                f"end {self.end} is not after start {self.start} (rule: end > start)", "end"
            )
        return self

    def start_time(self) -> datetime:
        """``start`` as an aware datetime."""
        return parse_time(self.start)

    def end_time(self) -> datetime:
        """``end`` as an aware datetime."""
        return parse_time(self.end)


class Account(KubeModel):
    """``spec.accounts[]``: an AWS account the fleet's clusters live in, and the role to assume."""

    name: DnsLabel
    account_id: Annotated[str, matching(ACCOUNT_ID, "a 12-digit AWS account id")]
    role_arn: str
    external_id: (
        Annotated[str, matching(EXTERNAL_ID, "2-1224 characters of [\\w+=,.@:/-]")] | None
    ) = None

    @model_validator(mode="after")
    def _role_in_account(self) -> Account:
        match = ROLE_ARN.fullmatch(self.role_arn)
        if match is None:
            raise rule_error(
                f"{self.role_arn!r} is not an IAM role ARN such as "
                f"arn:aws:iam::{self.account_id}:role/driftwave-fleet "
                "(rule: arn:PARTITION:iam::ACCOUNT:role/NAME)",
                "roleArn",
            )
        if match.group(2) != self.account_id:
            raise rule_error(
                f"the role belongs to account {match.group(2)}, not {self.account_id} "
                "(rule: roleArn must be a role of the account's accountId)",
                "roleArn",
            )
        return self


class AgentRef(KubeModel):
    """``clusters[].agent``: where the cluster's agent listens, where its token is kept, and
    how its TLS is verified.

    Rules: an ``http://`` endpoint is refused unless its host is loopback (the token would
    cross the network unencrypted); the TLS references need an ``https://`` endpoint; a client
    certificate comes with its key."""

    endpoint: HttpUrl
    credentials_ref: str
    """``env:NAME`` (an environment variable of the control plane), ``file:PATH`` or
    ``secretsmanager:ARN``: a reference only, never the token itself."""
    ca_ref: str | None = None
    """Where the PEM bundle of the CA(s) that signed the agent's certificate is (same schemes);
    the agent's certificate is verified against it alone. Default: the system's CAs."""
    client_certificate_ref: str | None = None
    """Mutual TLS: the fleet's client certificate chain, PEM, presented to this agent."""
    client_key_ref: str | None = None
    """Mutual TLS: that certificate's private key, PEM."""

    @field_validator("credentials_ref")
    @classmethod
    def _reference(cls, value: str) -> str:
        if not CREDENTIALS_REF.fullmatch(value):
            raise ValueError(
                "not a credentials reference (rule: env:NAME, file:PATH or "
                "secretsmanager:ARN of a Secrets Manager secret; the token itself never goes in "
                "a manifest)"
            )
        return value

    @field_validator("ca_ref", "client_certificate_ref", "client_key_ref")
    @classmethod
    def _pem_reference(cls, value: str | None) -> str | None:
        if value is not None and not CREDENTIALS_REF.fullmatch(value):
            raise ValueError(
                "not a reference to a PEM document (rule: env:NAME, file:PATH or "
                "secretsmanager:ARN of a Secrets Manager secret)"
            )
        return value

    @model_validator(mode="after")
    def _tls(self) -> AgentRef:
        plain = self.endpoint.lower().startswith("http://")
        if plain and not is_loopback_url(self.endpoint):
            raise rule_error(
                f"{self.endpoint!r} is plain http to another machine: the agent's bearer token "
                "would cross the network unencrypted (rule: https:// for an agent off loopback; "
                "http:// only for 127.0.0.1, ::1 or localhost)",
                "endpoint",
            )
        refs = {
            "caRef": self.ca_ref,
            "clientCertificateRef": self.client_certificate_ref,
            "clientKeyRef": self.client_key_ref,
        }
        given = [name for name, ref in refs.items() if ref is not None]
        if plain and given:
            raise rule_error(
                f"TLS settings for a plain http endpoint (rule: {given[0]} needs an https:// "
                "endpoint)",
                given[0],
            )
        if (self.client_certificate_ref is None) != (self.client_key_ref is None):
            missing = "clientKeyRef" if self.client_key_ref is None else "clientCertificateRef"
            other = "clientCertificateRef" if missing == "clientKeyRef" else "clientKeyRef"
            raise rule_error(
                f"{other} is set without {missing} (rule: a client certificate comes with its "
                "key: give both or neither)",
                missing,
            )
        return self


class MaintenanceWindow(KubeModel):
    """``clusters[].maintenanceWindows[]``: a recurring period in which wave steps may start.

    ``schedule`` is a five-field cron expression (or a macro such as ``@daily``) read in
    ``timeZone`` (default UTC); each firing opens the window for ``duration`` of elapsed time.
    Schedules follow the cron library Karpenter reads budgets with (:mod:`common.schedules`,
    shared with the agent's budgets): a wall time the spring clock change skips does not fire
    that day; one the autumn change repeats fires at both instants.
    """

    schedule: str
    duration: Duration
    time_zone: TimeZone = "UTC"

    @field_validator("schedule")
    @classmethod
    def _cron(cls, schedule: str) -> str:
        problem = cron_problem(schedule)
        if problem:
            raise ValueError(f"{problem} (rule: five cron fields: minute hour day month weekday)")
        if not parse_cron(schedule).ever:
            raise ValueError(
                f"schedule {schedule!r} never fires (rule: the window must open some day)"
            )
        return schedule

    @field_validator("duration")
    @classmethod
    def _length(cls, duration: str) -> str:
        length = duration_of(duration)
        if not timedelta(0) < length < MAX_WINDOW:
            raise ValueError(f"duration {duration} is out of range (rule: > 0s and < 168h)")
        return duration


class Cluster(KubeModel):
    """``spec.clusters[]``: one EKS cluster, its ring, labels, agent and maintenance windows."""

    name: DnsLabel
    account: str
    region: Annotated[str, matching(REGION, "an AWS region such as us-east-1")]
    ring: str
    labels: Labels = Field(default_factory=dict)
    agent: AgentRef
    maintenance_windows: list[MaintenanceWindow] = Field(default_factory=list)
    """No window means always open."""


NOTIFICATION_EVENTS = (
    "rollout.started",
    "rollout.paused",
    "rollout.resumed",
    "rollout.aborted",
    "rollout.finished",
    "ring.awaiting-approval",
    "wave.gate-passed",
    "wave.gate-failed",
    "rollback.started",
    "rollback.finished",
    "rollback.failed",
)
"""The event types a webhook may subscribe to (the CloudEvents ``type`` without its
``io.driftwave.`` prefix, which may also be written)."""
EVENT_PREFIX = "io.driftwave."


class Notification(KubeModel):
    """``spec.notifications[]``: a webhook receiving the fleet's rollout events as CloudEvents.

    ``secretRef`` (``env:NAME``, ``file:PATH`` or ``secretsmanager:ARN``, as a cluster's
    ``credentialsRef``) points at a bearer token sent as ``Authorization``; it is read by the
    scheduler's process when it delivers, and never logged nor audited."""

    name: DnsLabel
    url: HttpUrl
    events: list[str] | None = None
    """Event types delivered (default: every type)."""
    secret_ref: str | None = None

    @field_validator("secret_ref")
    @classmethod
    def _secret(cls, value: str | None) -> str | None:
        if value is not None and not CREDENTIALS_REF.fullmatch(value):
            raise ValueError(
                "not a secret reference (rule: env:NAME, file:PATH or secretsmanager:ARN; the "
                "token itself never goes in a manifest)"
            )
        return value

    @model_validator(mode="after")
    def _known_events(self) -> Notification:
        for index, event in enumerate(self.events or []):
            if event.removeprefix(EVENT_PREFIX) not in NOTIFICATION_EVENTS:
                raise rule_error(
                    f"unknown event type {event!r} (rule: one of {', '.join(NOTIFICATION_EVENTS)})",
                    f"events[{index}]",
                )
        if self.events is not None and not self.events:
            raise rule_error(
                "no event type listed (rule: leave events out to receive every type)", "events"
            )
        return self

    def wants(self, event_type: str) -> bool:
        """Whether this webhook receives events of ``event_type`` (with or without prefix)."""
        if self.events is None:
            return True
        short = event_type.removeprefix(EVENT_PREFIX)
        return any(e.removeprefix(EVENT_PREFIX) == short for e in self.events)


class FleetSpec(KubeModel):
    """``spec`` of a Fleet."""

    rings: Annotated[list[DnsLabel], Field(min_length=1)]
    """The order of promotion: a release moves from the first ring to the last."""
    freezes: list[Freeze] = Field(default_factory=list)
    accounts: list[Account] = Field(default_factory=list)
    clusters: list[Cluster] = Field(default_factory=list)
    notifications: list[Notification] = Field(default_factory=list)
    """Webhooks told of rollouts starting, pausing, waiting for approval, gates and endings."""

    @model_validator(mode="after")
    def _references(self) -> FleetSpec:
        _unique(self.rings, "rings[{i}]", "ring")
        _unique([n.name for n in self.notifications], "notifications[{i}].name", "notification")
        _unique([a.name for a in self.accounts], "accounts[{i}].name", "account")
        _unique([c.name for c in self.clusters], "clusters[{i}].name", "cluster")
        accounts = {a.name for a in self.accounts}
        for index, cluster in enumerate(self.clusters):
            if cluster.account not in accounts:
                known = ", ".join(sorted(accounts)) or "none"
                raise rule_error(
                    f"account {cluster.account!r} is not in spec.accounts (known: {known}) "
                    "(rule: a cluster names one of the fleet's accounts)",
                    f"clusters[{index}].account",
                )
            if cluster.ring not in self.rings:
                raise rule_error(
                    f"ring {cluster.ring!r} is not in spec.rings ({', '.join(self.rings)}) "
                    "(rule: a cluster belongs to one of the fleet's rings)",
                    f"clusters[{index}].ring",
                )
        return self


def _unique(names: list[str], path: str, what: str) -> None:
    seen: set[str] = set()
    for index, name in enumerate(names):
        if name in seen:
            raise rule_error(
                f"{what} {name!r} is listed twice (rule: {what} names are unique)",
                path.format(i=index),
            )
        seen.add(name)


class Fleet(KubeModel):
    """A ``driftwave.io/v1alpha1`` Fleet; ``metadata.name`` is the fleet's name."""

    api_version: Literal["driftwave.io/v1alpha1"] = "driftwave.io/v1alpha1"
    kind: Literal["Fleet"] = "Fleet"
    metadata: ObjectMeta
    spec: FleetSpec

    @property
    def name(self) -> str:
        """The fleet's name."""
        return self.metadata.name or ""
