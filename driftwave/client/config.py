"""The CLI's config file: contexts, as kubectl has them.

Where: ``$DRIFTWAVE_CONFIG``, else ``~/.config/driftwave/config``. YAML::

    apiVersion: driftwave.io/v1alpha1
    kind: Config
    currentContext: prod
    contexts:
      - name: prod
        server: https://fleet.example.com        # the fleet API (http:// only on loopback)
        certificateAuthority: /etc/ssl/fleet.pem # optional: the CA the server's certificate has
        tokenFile: /run/secrets/fleet-token      # or tokenEnv: VAR (an automation token), or
        oidc:                                    # OIDC: set by set-context, or asked of the
          issuer: https://sso.example.com        # server (GET /v1/auth/config) at login
          clientId: driftwave-cli
        user:                                    # written by driftwave login
          idToken: ...
          refreshToken: ...
          expiry: "2026-01-05T09:00:00Z"

A context names a fleet API; without one (no ``currentContext``, no ``--context``, or the
context named ``embedded``) the commands run embedded, on the fleet database of
``DRIFTWAVE_DATABASE_URL``. Every value set is checked here (:func:`check_context`), naming the
field and its rule, before anything is written; the file is written whole and atomically, mode
0600 in a directory of mode 0700 (it holds credentials). :func:`shown` is what ``config view``
prints: the credentials replaced unless asked raw.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from common.addresses import is_loopback
from common.yamlsafe import YamlError, load_single
from driftwave.client.errors import ConfigError

EMBEDDED = "embedded"
"""The context name that means no server: the fleet database, here."""
NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
HIDDEN = "REDACTED"


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, validate_by_name=True, serialize_by_alias=True, extra="forbid"
    )


class OidcSettings(_Model):
    """Where a context's people sign in: the OIDC issuer and the CLI's client id there."""

    issuer: str
    client_id: str


class Credentials(_Model):
    """What ``driftwave login`` stored: the ID token sent to the API, the refresh token and the
    ID token's expiry (RFC 3339)."""

    id_token: str
    refresh_token: str | None = None
    expiry: str | None = None


class Context(_Model):
    """A fleet API and how to reach and authenticate to it."""

    name: str
    server: str
    certificate_authority: str | None = None
    token_file: str | None = None
    token_env: str | None = None
    oidc: OidcSettings | None = None
    user: Credentials | None = None


class Config(_Model):
    """The whole file."""

    api_version: Literal["driftwave.io/v1alpha1"] = "driftwave.io/v1alpha1"
    kind: Literal["Config"] = "Config"
    current_context: str | None = None
    contexts: list[Context] = Field(default_factory=list)

    def find(self, name: str) -> Context | None:
        """The context called ``name`` (None: none is)."""
        return next((c for c in self.contexts if c.name == name), None)

    def named(self, name: str, path: Path) -> Context:
        """The context called ``name``; :class:`ConfigError` listing the known ones otherwise."""
        found = self.find(name)
        if found is None:
            known = ", ".join(c.name for c in self.contexts) or "none"
            raise ConfigError(
                f"context {name!r} is not in {path} (contexts: {known}; add one with "
                "driftwave config set-context NAME --server URL)"
            )
        return found

    def put(self, context: Context) -> None:
        """Add ``context``, or replace the one of its name (in place)."""
        for index, known in enumerate(self.contexts):
            if known.name == context.name:
                self.contexts[index] = context
                return
        self.contexts.append(context)


def config_path(env: dict[str, str] | os._Environ[str] | None = None) -> Path:
    """``$DRIFTWAVE_CONFIG``, else ``~/.config/driftwave/config``."""
    environ = os.environ if env is None else env
    given = environ.get("DRIFTWAVE_CONFIG")
    if given:
        return Path(given).expanduser()
    return Path("~/.config/driftwave/config").expanduser()


def load(path: Path) -> Config:
    """The config at ``path`` (an empty one when there is no file); :class:`ConfigError` naming
    the file and what is wrong."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Config()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason})") from exc
    try:
        data = load_single(text) if text.strip() else {}
    except YamlError as exc:
        raise ConfigError(f"{path}: {exc.reason}") from exc
    try:
        return Config.model_validate(data or {})
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(p) for p in problem["loc"]) or "(top)"
        raise ConfigError(f"{path}: {where}: {problem['msg']}") from exc


def save(config: Config, path: Path) -> None:
    """Write ``config`` to ``path`` atomically, mode 0600 (its folder made with mode 0700)."""
    folder = path.parent
    if not folder.exists():
        folder.mkdir(mode=0o700, parents=True)
    text = yaml.safe_dump(
        config.model_dump(mode="json", exclude_none=True), sort_keys=False, allow_unicode=True
    )
    handle, temporary = tempfile.mkstemp(prefix=".config-", dir=folder)
    try:
        os.fchmod(handle, 0o600)
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def check_url(value: str, field: str) -> str:
    """An ``https://`` URL (``http://`` only to a loopback host), without a trailing slash;
    :class:`ConfigError` naming ``field`` and the rule otherwise."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"{field}: {value!r} is not a URL such as https://fleet.example.com "
            "(rule: http(s)://HOST[:PORT][/PATH])"
        )
    if parts.query or parts.fragment:
        raise ConfigError(f"{field}: {value!r} has a query or fragment (rule: none)")
    if parts.scheme == "http" and not is_loopback(parts.hostname):
        raise ConfigError(
            f"{field}: {value!r} is plain http to {parts.hostname} (rule: https, or http only "
            "to a loopback address such as 127.0.0.1: credentials must not cross a network "
            "in the clear)"
        )
    return value.rstrip("/")


def check_file(value: str, field: str) -> str:
    """The absolute path of a readable file; :class:`ConfigError` naming ``field`` otherwise."""
    path = Path(value).expanduser()
    if not path.is_file():
        raise ConfigError(f"{field}: {value} is not a file (rule: an existing, readable file)")
    try:
        path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{field}: cannot read {value}: {exc.strerror}") from exc
    return str(path.resolve())


def check_name(name: str) -> str:
    """A context's name: letters, digits, ``.``, ``_``, ``-``; not ``embedded``."""
    if not NAME.match(name):
        raise ConfigError(
            f"name: {name!r} is not a context name (rule: 1-63 letters, digits, '.', '_' or "
            "'-', starting and ending with a letter or digit)"
        )
    if name == EMBEDDED:
        raise ConfigError(
            f"name: {EMBEDDED!r} is reserved (rule: it names the embedded fleet database)"
        )
    return name


def check_context(
    old: Context | None,
    name: str,
    changes: dict[str, Any],
) -> Context:
    """The context ``name`` after ``changes`` (``server``, ``certificate_authority``,
    ``token_file``, ``token_env``, ``oidc_issuer``, ``oidc_client_id``: the values given; keys
    absent keep the old value), every value checked; :class:`ConfigError` naming the field."""
    check_name(name)
    data: dict[str, Any] = old.model_dump(by_alias=False) if old is not None else {"name": name}
    if changes.get("server") is not None:
        data["server"] = check_url(changes["server"], "--server")
        data["user"] = None  # credentials of another server are not sent to this one
    if not data.get("server"):
        raise ConfigError("--server: required for a new context (rule: the fleet API's URL)")
    if changes.get("certificate_authority") is not None:
        data["certificate_authority"] = check_file(
            changes["certificate_authority"], "--certificate-authority"
        )
    token_file, token_env = changes.get("token_file"), changes.get("token_env")
    if token_file is not None and token_env is not None:
        raise ConfigError("--token-file and --token-env: give one (rule: one token per context)")
    if token_file is not None:
        data["token_file"], data["token_env"] = check_file(token_file, "--token-file"), None
    if token_env is not None:
        if not ENV_NAME.match(token_env):
            raise ConfigError(
                f"--token-env: {token_env!r} is not an environment variable name "
                "(rule: letters, digits and _, not starting with a digit)"
            )
        data["token_env"], data["token_file"] = token_env, None
    issuer, client_id = changes.get("oidc_issuer"), changes.get("oidc_client_id")
    if issuer is not None or client_id is not None:
        known = data.get("oidc") or {}
        issuer = check_url(issuer, "--oidc-issuer") if issuer is not None else known.get("issuer")
        client_id = client_id if client_id is not None else known.get("client_id")
        if not issuer or not client_id or not client_id.strip():
            raise ConfigError(
                "--oidc-issuer and --oidc-client-id: give both (rule: an OIDC sign-in needs "
                "the issuer and the CLI's client id there)"
            )
        data["oidc"] = {"issuer": issuer, "client_id": client_id.strip()}
        data["user"] = None
    return Context.model_validate(data)


def shown(config: Config, raw: bool) -> dict[str, Any]:
    """The config as ``config view`` prints it: the ID and refresh tokens replaced by
    ``REDACTED`` unless ``raw``."""
    data = config.model_dump(mode="json", exclude_none=True)
    if raw:
        return data
    for context in data.get("contexts", []):
        user = context.get("user")
        if user:
            for key in ("idToken", "refreshToken"):
                if key in user:
                    user[key] = HIDDEN
    return data
