"""The agent's settings from the environment (pydantic-settings), read once by the command line.

``driftwave agent serve`` builds :class:`AgentSettings` once at start, values given on the
command line taking precedence over the environment (:func:`load_agent_settings`), and passes
what it holds into the agent's options (:class:`agent.server.serve.ServeOptions`,
:class:`agent.live.options.LiveOptions`): no agent module reads the environment itself. A bad
value fails there, naming the variable (or the option that gave it) and the rule.

The variables keep the names the agent has always read: ``DRIFTWAVE_AGENT_TOKEN``,
``POD_NAME``, ``POD_NAMESPACE``, ``DRIFTWAVE_CLUSTER_NAME``, ``AWS_REGION``, ``AWS_PROFILE``,
``DRIFTWAVE_INTERRUPTION_QUEUE`` and ``CLUSTER_CA_BUNDLE``, and for HTTPS
``DRIFTWAVE_AGENT_TLS_CERT_FILE``, ``DRIFTWAVE_AGENT_TLS_KEY_FILE`` and
``DRIFTWAVE_AGENT_CLIENT_CA_FILE``. An empty variable counts as unset.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

NAMESPACE_RULE = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
"""A Kubernetes namespace: a DNS-1123 label (1-63 lowercase letters, digits and hyphens,
starting and ending with a letter or digit)."""

RULES = {
    "string_pattern_mismatch": "rule: a Kubernetes namespace, 1-63 lowercase letters, digits "
    "and hyphens, starting and ending with a letter or digit",
}
"""The rule a failed check names, by pydantic's error type (else pydantic's own message)."""


class AgentSettingsError(ValueError):
    """A setting with a bad value; the message names the variable (or option) and the rule."""


class AgentSettings(BaseSettings):
    """What the agent reads from its environment. Field names are the agent's options' names
    (``lease_namespace`` is ``--lease-namespace``); each reads the variable its alias names."""

    model_config = SettingsConfigDict(
        case_sensitive=True, env_ignore_empty=True, extra="ignore", populate_by_name=True
    )

    token: str = Field(default="", validation_alias="DRIFTWAVE_AGENT_TOKEN")
    """The bearer token clients must send (``--token-file`` beats it)."""

    pod_name: str = Field(default="", validation_alias="POD_NAME")
    """The pod's name (the chart sets it): the leader-election identity's prefix (else the
    host name)."""

    lease_namespace: str = Field(
        default="kube-system", validation_alias="POD_NAMESPACE", pattern=NAMESPACE_RULE
    )
    """The namespace of the leader Lease (``--lease-namespace``)."""

    cluster_name: str | None = Field(default=None, validation_alias="DRIFTWAVE_CLUSTER_NAME")
    """The EKS cluster's name (``--cluster-name``)."""

    region: str | None = Field(default=None, validation_alias="AWS_REGION")
    """The AWS region (``--region``; default: the profile's)."""

    profile: str | None = Field(default=None, validation_alias="AWS_PROFILE")
    """A named AWS profile (``--profile``)."""

    interruption_queue: str | None = Field(
        default=None, validation_alias="DRIFTWAVE_INTERRUPTION_QUEUE"
    )
    """The SQS queue of EC2 interruption events (``--interruption-queue``)."""

    cluster_ca_bundle: str | None = Field(default=None, validation_alias="CLUSTER_CA_BUNDLE")
    """The cluster's CA bundle, base64 (``--cluster-ca-bundle``; checked with the options)."""

    tls_cert_file: Path | None = Field(
        default=None, validation_alias="DRIFTWAVE_AGENT_TLS_CERT_FILE"
    )
    """The agent's certificate chain, PEM (``--tls-cert-file``): it then serves HTTPS."""

    tls_key_file: Path | None = Field(default=None, validation_alias="DRIFTWAVE_AGENT_TLS_KEY_FILE")
    """The certificate's private key, PEM (``--tls-key-file``)."""

    client_ca_file: Path | None = Field(
        default=None, validation_alias="DRIFTWAVE_AGENT_CLIENT_CA_FILE"
    )
    """The CAs a client certificate must be signed by (``--client-ca-file``: mutual TLS)."""


VARIABLES: dict[str, str] = {
    name: str(field.validation_alias) for name, field in AgentSettings.model_fields.items()
}
"""Each setting's environment variable, by field name."""


def load_agent_settings(given: Mapping[str, Any] | None = None) -> AgentSettings:
    """The settings: ``given`` (values from the command line, by field name) over the
    environment, over the defaults. Raises :class:`AgentSettingsError` naming the first bad
    value's variable (or ``--option`` when the command line gave it) and the rule."""
    values = dict(given or {})
    try:
        return AgentSettings(**values)
    except ValidationError as exc:
        raise AgentSettingsError(_message(exc, values)) from exc


def _message(exc: ValidationError, given: Mapping[str, Any]) -> str:
    problem = exc.errors()[0]
    key = str(problem["loc"][0]) if problem["loc"] else ""
    name = next((n for n, v in VARIABLES.items() if key in (n, v)), key)
    where = "--" + name.replace("_", "-") if name in given else VARIABLES.get(name, key)
    value = problem.get("input")
    rule = RULES.get(problem["type"], f"rule: {problem['msg']}")
    return f"bad setting {where}: {value!r} ({rule})"
