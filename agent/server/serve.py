"""What ``driftwave agent serve`` does, apart from parsing its options: build the agents'
configurations, read the token and the TLS files, set up tracing, serve, and report each agent
as it listens.

Problems are raised as :class:`ServeError` with every message ready to print (the command prints
them and exits 1): an invalid option or ``--config`` entry (named by option or by path), no
token, an unreadable token file, TLS files that do not load, plain HTTP asked for off loopback
(:func:`agent.server.tls.listen_problem`), a port in use, a release the catalog does not have.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from opentelemetry.sdk.trace import TracerProvider
from pydantic import ValidationError

from agent.live.options import LiveOptions, check_live_options
from agent.live.parts import BuildError, LiveParts
from agent.server.live import serve_live
from agent.server.runner import (
    AgentConfig,
    ConfigError,
    ListenError,
    RunningAgent,
    config_problems,
    load_configs,
    run_agents,
)
from agent.server.tls import (
    RELOAD_INTERVAL,
    ReloadingTLS,
    TLSFiles,
    TLSSetupError,
    listen_problem,
    tls_options_problems,
)
from agent.sim.member import MemberError
from common.auth import AuthConfigError, hash_token
from common.kubemodel import issues_from_error
from common.telemetry import TelemetryError, otlp_traces_url, tracer_provider

TOKEN_ENV = "DRIFTWAVE_AGENT_TOKEN"
SERVICE_NAME = "driftwave-agent"
OPTIONS = {
    "name": "--name",
    "port": "--port",
    "nodes": "--nodes",
    "seed": "--seed",
    "kubernetesVersion": "--kubernetes-version",
    "amiRelease": "--ami-release",
    "faultyReleases": "--faulty-release",
    "speed": "--speed",
}
NO_TOKEN = (
    "no token: the agent's /v1 API needs one. Pass it with --token-file PATH (a file holding "
    f"the token) or the environment variable {TOKEN_ENV}, or give each --config entry a "
    "tokenHash (sha256:<hex>, e.g. from: printf %s TOKEN | sha256sum)"
)

NO_LIVE_TOKEN = (
    "no token: the agent's /v1 API needs one. Pass it with --token-file PATH (a file holding "
    f"the token, e.g. a mounted Secret) or the environment variable {TOKEN_ENV}"
)


class ServeError(Exception):
    """``driftwave agent serve`` cannot start; ``problems`` are the lines to print
    (``untokened``: the agents' configuration, invalid, has an entry without a token hash)."""

    def __init__(self, problems: list[str], untokened: bool = False) -> None:
        self.problems = problems
        self.untokened = untokened
        super().__init__("; ".join(problems))


@dataclass
class ServeOptions:
    """The command's options (see ``driftwave agent serve --help``)."""

    host: str = "127.0.0.1"
    port: int = 9100
    name: str = "fleet-member"
    nodes: int = 200
    seed: int = 1
    speed: float = 60.0
    kubernetes_version: str = "1.30"
    ami_release: str = "v20251202"
    faulty_releases: Sequence[str] = field(default_factory=tuple)
    token_file: Path | None = None
    config: Path | None = None
    trace_file: Path | None = None
    otlp_endpoint: str | None = None
    token: str = ""
    """The token from the environment (``DRIFTWAVE_AGENT_TOKEN``, read by the caller:
    :class:`agent.settings.AgentSettings`); ``token_file`` beats it."""
    live: LiveOptions | None = None
    """Set for a real cluster (``--kubeconfig`` or ``--in-cluster``): the simulation's options
    are then unused."""
    tls_cert_file: Path | None = None
    tls_key_file: Path | None = None
    client_ca_file: Path | None = None
    """With ``tls_cert_file`` and ``tls_key_file`` the agent serves HTTPS; with this too it
    requires a client certificate signed by one of its CAs (mutual TLS)."""
    tls_reload_interval: float = RELOAD_INTERVAL
    """Seconds between two looks at the certificate files (:mod:`agent.server.tls`)."""


def agent_configs(options: ServeOptions) -> list[AgentConfig]:
    """The agents to run: the ``--config`` file's, else one from the options."""
    if options.config is not None:
        try:
            configs = load_configs(options.config)
        except ConfigError as exc:
            raise ServeError([f"{exc.source}: {p}" for p in exc.problems], exc.untokened) from exc
        return [
            c if "speed" in c.model_fields_set else c.model_copy(update={"speed": options.speed})
            for c in configs
        ]
    data: dict[str, Any] = {
        "name": options.name,
        "port": options.port,
        "nodes": options.nodes,
        "seed": options.seed,
        "kubernetesVersion": options.kubernetes_version,
        "amiRelease": options.ami_release,
        "faultyReleases": list(options.faulty_releases),
        "speed": options.speed,
    }
    try:
        config = AgentConfig.model_validate(data, by_alias=True, by_name=False)
    except ValidationError as exc:
        raise ServeError(
            [_as_option(i.path, i.message) for i in issues_from_error(exc, AgentConfig)]
        ) from exc
    problems = [_as_option(field, why) for field, why in config_problems(config)]
    if problems:
        raise ServeError(problems)
    return [config]


def _as_option(path: str, message: str) -> str:
    """A problem of a configuration field, named by the command's option (``--ami-release``)."""
    head, _, rest = path.partition("[")
    return f"{OPTIONS.get(head, head) + (f'[{rest}' if rest else '')}: {message}"


def token_hashes(options: ServeOptions, environ: Mapping[str, str]) -> set[str]:
    """The hash of the token from ``--token-file`` (first) or ``environ``'s
    ``DRIFTWAVE_AGENT_TOKEN``, if any."""
    token: str | None = None
    if options.token_file is not None:
        try:
            token = options.token_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
            raise ServeError([f"--token-file: cannot read {options.token_file}: {why}"]) from exc
        if not token.strip():
            raise ServeError([f"--token-file: {options.token_file} is empty"])
    elif environ.get(TOKEN_ENV, "").strip():
        token = environ[TOKEN_ENV]
    return {hash_token(token)} if token is not None else set()


def _environ(options: ServeOptions, environ: Mapping[str, str] | None) -> Mapping[str, str]:
    """The variables the token is read from: ``environ`` when given, else ``options.token``."""
    return {TOKEN_ENV: options.token} if environ is None else environ


def server_tls(options: ServeOptions, host: str, say: Callable[[str], None]) -> ReloadingTLS | None:
    """The TLS the options ask for (None: plain HTTP, on loopback only); ServeError naming
    every problem of the TLS options and of ``host``."""
    problems = tls_options_problems(
        options.tls_cert_file, options.tls_key_file, options.client_ca_file
    )
    files = None
    if options.tls_cert_file is not None and options.tls_key_file is not None:
        files = TLSFiles(options.tls_cert_file, options.tls_key_file, options.client_ca_file)
    listen = listen_problem(host, files)
    problems.extend([listen] if listen else [])
    if problems:
        raise ServeError(problems)
    if files is None:
        return None
    try:
        return ReloadingTLS(files, interval=options.tls_reload_interval, say=say)
    except TLSSetupError as exc:
        raise ServeError([str(exc)]) from exc


def describe(agent: RunningAgent) -> str:
    """The line printed when an agent listens."""
    config = agent.config
    faulty = f", faulty {', '.join(config.faulty_releases)}" if config.faulty_releases else ""
    return (
        f"agent {agent.name} listening on {agent.url} ({config.nodes} nodes, Kubernetes "
        f"{config.kubernetes_version}, al2023@{config.ami_release}{faulty}, "
        f"{config.speed:g}x real time)"
    )


def serve(
    options: ServeOptions,
    say: Callable[[str], None],
    environ: Mapping[str, str] | None = None,
) -> None:
    """Run the agents until SIGINT / SIGTERM; ``say`` prints a line per agent listening.
    Raises ServeError."""
    if options.live is not None:
        serve_real(options, options.live, say, environ)
        return
    problems: list[str] = []
    try:
        configs = agent_configs(options)
        untokened = any(c.token_hash is None for c in configs)
    except ServeError as exc:
        problems.extend(exc.problems)
        configs, untokened = [], options.config is None or exc.untokened
    hashes = _collect(problems, lambda: token_hashes(options, _environ(options, environ)))
    if hashes == set() and untokened:
        problems.append(NO_TOKEN)
    tls = _collect(problems, lambda: server_tls(options, options.host, say))
    if problems:  # every problem at once, before anything is opened
        if options.otlp_endpoint is not None:
            _collect(problems, lambda: _otlp_checked(options.otlp_endpoint or ""))
        raise ServeError(problems)
    assert hashes is not None
    provider = _tracing(options)

    def ready(agents: list[RunningAgent]) -> None:
        for agent in agents:
            say(describe(agent))

    try:
        run_agents(
            configs,
            host=options.host,
            ready=ready,
            token_hashes=hashes,
            tracer_provider=provider,
            tls=tls,
        )
    except ListenError as exc:
        raise ServeError(exc.problems) from exc
    except (AuthConfigError, MemberError, OSError) as exc:
        raise ServeError([str(exc)]) from exc
    finally:
        if provider is not None:
            provider.shutdown()


T = TypeVar("T")


def _collect(problems: list[str], step: Callable[[], T]) -> T | None:
    """``step()``, or None with its :class:`ServeError`'s problems added to ``problems``."""
    try:
        return step()
    except ServeError as exc:
        problems.extend(exc.problems)
        return None


def _otlp_checked(endpoint: str) -> None:
    """Raise ServeError when ``endpoint`` is not an OTLP collector's URL (nothing is opened)."""
    try:
        otlp_traces_url(endpoint)
    except TelemetryError as exc:
        raise ServeError([str(exc)]) from exc


def _tracing(options: ServeOptions) -> TracerProvider | None:
    """The tracer provider the options ask for (None: no tracing); ServeError when invalid."""
    if options.trace_file is None and options.otlp_endpoint is None:
        return None
    try:
        return tracer_provider(
            SERVICE_NAME, file=options.trace_file, otlp_endpoint=options.otlp_endpoint
        )
    except TelemetryError as exc:
        raise ServeError([str(exc)]) from exc


def serve_real(
    options: ServeOptions,
    live: LiveOptions,
    say: Callable[[str], None],
    environ: Mapping[str, str] | None = None,
    build: Callable[[LiveOptions], LiveParts] | None = None,
) -> None:
    """Serve the agent over a real cluster (:mod:`agent.server.live`) until SIGINT / SIGTERM.
    ``build`` defaults to the real adapters (:func:`agent.live.build.build_live`). Raises
    ServeError: invalid options, no token, a cluster or AWS that cannot be reached at start."""
    problems = list(check_live_options(live))
    hashes = _collect(problems, lambda: token_hashes(options, _environ(options, environ)))
    if hashes == set():
        problems.append(NO_LIVE_TOKEN)
    tls = _collect(problems, lambda: server_tls(options, live.host, say))
    if problems or not hashes:  # every problem at once
        raise ServeError(problems)
    if build is None:
        from agent.live.build import build_live

        build = build_live
    provider = _tracing(options)
    try:
        serve_live(live, build, token_hashes=hashes, say=say, tracer_provider=provider, tls=tls)
    except (BuildError, OSError) as exc:
        raise ServeError([str(exc)]) from exc
    finally:
        if provider is not None:
            provider.shutdown()
