"""Serving simulated agents: each its own World, RealTimeSimulation and HTTP server, in one process.

:func:`run_agents` builds one fleet member per :class:`AgentConfig`
(:func:`agent.sim.member.member_world`), binds every port first (so a port in use fails before
any world is built), starts the real-time simulations and the uvicorn servers in one event loop,
calls ``ready`` with where each agent listens, and serves until SIGINT or SIGTERM (or ``stop`` is
set): then every server closes its connections and every simulation thread stops.
:func:`load_configs` reads the ``--config`` file of ``driftwave agent serve``. :func:`bind`,
:class:`AgentHTTPServer` and :func:`serve_all` also serve the live agent
(:mod:`agent.server.live`), whose runner is its loop instead of a simulation.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import threading
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Protocol, TypeVar

import uvicorn
from opentelemetry.trace import TracerProvider
from pydantic import Field, ValidationError, field_validator

from agent.server.app import create_app
from agent.server.tls import ClientCertificateProtocol, ReloadingTLS
from agent.service import AgentService
from agent.sim.member import MAX_NODES, member_problems, member_world
from agent.sim.realtime import RealTimeSimulation
from common.auth import TOKEN_HASH, AuthConfigError
from common.kubemodel import KubeModel, issues_from_error, matching
from common.listening import listen
from common.names import KUBERNETES_VERSION, dns_subdomain_problem
from common.yamlsafe import YamlError, load_single

RELEASE = r"^v[0-9]{8}$"
_Release = Annotated[str, matching(RELEASE, "an AL2023 release such as v20251202")]


class AgentConfig(KubeModel):
    """One simulated agent (an item of the ``--config`` list; camelCase keys)."""

    name: Annotated[str, Field(min_length=1)]
    port: Annotated[int, Field(ge=0, le=65535)] = 9100
    nodes: Annotated[int, Field(ge=0, le=MAX_NODES)] = 200
    seed: int = 1
    kubernetes_version: Annotated[str, matching(KUBERNETES_VERSION, "a version such as 1.30")] = (
        "1.30"
    )
    ami_release: _Release = "v20251202"
    faulty_releases: list[_Release] = Field(default_factory=list)
    token_hash: Annotated[str, matching(TOKEN_HASH, "sha256:<64 lowercase hex digits>")] | None = (
        None
    )
    speed: Annotated[float, Field(gt=0, le=1_000_000)] = 60.0

    @field_validator("name")
    @classmethod
    def _dns_name(cls, name: str) -> str:
        problem = dns_subdomain_problem(name)
        if problem:
            raise ValueError(problem)
        return name


class ConfigError(ValueError):
    """The agents' configuration is invalid; ``problems`` are ``path: message`` lines;
    ``untokened``: whether an entry has no ``tokenHash`` (so a token must come from elsewhere)."""

    def __init__(self, source: str, problems: list[str], untokened: bool = False) -> None:
        self.source = source
        self.problems = problems
        self.untokened = untokened
        super().__init__(f"{source}: " + "; ".join(problems))


def load_configs(path: Path) -> list[AgentConfig]:
    """The agents of a YAML or JSON file holding a list of :class:`AgentConfig` mappings;
    raises ConfigError naming each field at fault (``[1].port: must be at most 65535``)."""
    try:
        data = load_single(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(str(path), [f"cannot read the file: {exc.strerror}"]) from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(str(path), [f"not UTF-8 text ({exc.reason})"]) from exc
    except YamlError as exc:
        raise ConfigError(str(path), [f"not YAML or JSON: {exc.reason}"]) from exc
    return parse_configs(data, str(path))


def parse_configs(data: Any, source: str) -> list[AgentConfig]:
    """:func:`load_configs` on already loaded data: every problem of every entry at once (its
    fields, names and ports taken twice, releases the catalog does not have)."""
    if not isinstance(data, list) or not data:
        raise ConfigError(source, ["the file must hold a non-empty list of agents"])
    configs: list[AgentConfig] = []
    problems: list[str] = []
    for index, item in enumerate(data):
        try:
            config = AgentConfig.model_validate(item, by_alias=True, by_name=False)
        except ValidationError as exc:
            for issue in issues_from_error(exc, AgentConfig):
                path = f"[{index}].{issue.path}" if issue.path else f"[{index}]"
                problems.append(f"{path}: {issue.message}")
            continue
        configs.append(config)
        problems.extend(f"[{index}].{field}: {why}" for field, why in config_problems(config))
    problems.extend(_duplicates(data))
    if problems:
        untokened = any(not isinstance(i, dict) or "tokenHash" not in i for i in data)
        raise ConfigError(source, sorted(problems, key=_entry_order), untokened)
    return configs


def config_problems(config: AgentConfig) -> list[tuple[str, str]]:
    """What keeps a valid entry's cluster from being built: (field, what is wrong and the
    rule), as :func:`agent.sim.member.member_problems` says it."""
    return member_problems(
        config.name,
        nodes=config.nodes,
        kubernetes_version=config.kubernetes_version,
        ami_release=config.ami_release,
        faulty_releases=tuple(config.faulty_releases),
    )


def _entry_order(problem: str) -> int:
    """The entry a ``[N].field: ...`` problem is about, to list problems in the file's order."""
    return int(problem[1 : problem.index("]")])


def _duplicates(data: list[Any]) -> Iterator[str]:
    """Names and ports given twice, by the entries' places in the file (valid or not)."""
    names: dict[str, int] = {}
    ports: dict[int, int] = {}
    for index, item in enumerate(data):
        if not isinstance(item, dict):
            continue
        name, port = item.get("name"), item.get("port", 9100)
        if isinstance(name, str) and name in names:
            yield (
                f"[{index}].name: {name!r} is also agent [{names[name]}]'s name "
                "(rule: names are unique)"
            )
        if isinstance(name, str):
            names.setdefault(name, index)
        if isinstance(port, int) and not isinstance(port, bool) and port:
            if port in ports:
                yield (
                    f"[{index}].port: {port} is also agent [{ports[port]}]'s port "
                    "(rule: ports are unique; 0 picks a free one)"
                )
            ports.setdefault(port, index)


class ListenError(OSError):
    """Ports the agents cannot listen on; ``problems`` names each agent and its port."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


class Runner(Protocol):
    """What moves a served agent's cluster: a real-time simulation, or a live agent's loop."""

    def start(self) -> object:
        """Start its thread."""
        ...

    def stop(self, timeout: float = ...) -> None:
        """Stop its thread."""
        ...


class Served(Protocol):
    """A served agent, as :func:`serve_all` needs it."""

    @property
    def simulation(self) -> Runner:
        """What moves its cluster."""
        ...


S = TypeVar("S", bound=Served)


@dataclass
class RunningAgent:
    """A served agent: its name, URL, service and simulation."""

    name: str
    url: str
    port: int
    service: AgentService
    simulation: RealTimeSimulation
    config: AgentConfig


class AgentHTTPServer(uvicorn.Server):
    """A uvicorn server that leaves signals to :func:`run_agents` (several share the loop)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """Install nothing: the runner stops every server on SIGINT / SIGTERM."""
        yield


def _agent(
    config: AgentConfig,
    sock: socket.socket,
    host: str,
    hashes: set[str],
    tracer_provider: TracerProvider | None,
    tls: ReloadingTLS | None,
) -> tuple[RunningAgent, AgentHTTPServer]:
    world = member_world(
        config.name,
        nodes=config.nodes,
        seed=config.seed,
        kubernetes_version=config.kubernetes_version,
        ami_release=config.ami_release,
        faulty_releases=tuple(config.faulty_releases),
    )
    service = AgentService(
        world, name=config.name, tracer_provider=tracer_provider, speed=config.speed
    )
    sim = RealTimeSimulation(
        world,
        config.speed,
        lock=service.lock,
        on_step=service.refresh,
        publish=service.publish,
    )
    app = create_app(
        service,
        token_hashes=hashes,
        tracer_provider=tracer_provider,
        healthy=lambda: sim.error is None,
        client_certificates=tls is not None and tls.mutual,
    )
    port = int(sock.getsockname()[1])
    running = RunningAgent(config.name, served_url(host, port, tls), port, service, sim, config)
    return running, http_server(app, tls)


def served_url(host: str, port: int, tls: ReloadingTLS | None) -> str:
    """The URL an agent listening on ``host:port`` is reached at (https with ``tls``)."""
    shown = f"[{host}]" if ":" in host else host
    return f"{'https' if tls else 'http'}://{shown}:{port}"


def http_server(app: Any, tls: ReloadingTLS | None) -> AgentHTTPServer:
    """The uvicorn server of an agent's app, serving TLS from ``tls``'s context when given
    (the same context object for its lifetime, so a reload reaches new handshakes)."""
    return AgentHTTPServer(
        uvicorn.Config(
            app,
            log_config=None,
            log_level="warning",
            access_log=False,
            lifespan="off",
            ssl_context_factory=tls.factory if tls is not None else None,
            http=ClientCertificateProtocol if tls is not None else "auto",
        )
    )


def run_agents(
    configs: Sequence[AgentConfig],
    *,
    host: str = "127.0.0.1",
    ready: Callable[[list[RunningAgent]], None] | None = None,
    token_hashes: Collection[str] = (),
    tracer_provider: TracerProvider | None = None,
    stop: threading.Event | None = None,
    tls: ReloadingTLS | None = None,
) -> None:
    """Serve the agents until SIGINT / SIGTERM or ``stop`` (module docstring), over HTTPS
    with ``tls`` (every agent of the process presents its certificate).

    Each agent accepts the tokens of ``token_hashes`` and its own ``tokenHash``; an agent left
    without any raises AuthConfigError before anything starts. :class:`ListenError` naming
    every port taken.
    """
    hashes = {
        c.name: set(token_hashes) | ({c.token_hash} if c.token_hash else set()) for c in configs
    }
    for config in configs:
        if not hashes[config.name]:
            raise AuthConfigError(
                f"agent {config.name}: no token, so its /v1 API would be open to anyone "
                "(rule: give a token with --token-file or DRIFTWAVE_AGENT_TOKEN, or a tokenHash)"
            )
    sockets: list[socket.socket] = []
    try:
        taken: list[str] = []
        for config in configs:
            try:
                sockets.append(listen(host, config.port))
            except OSError as exc:
                taken.append(f"agent {config.name}: {exc.strerror}")
        if taken:
            raise ListenError(taken)
        pairs = [
            _agent(config, sock, host, hashes[config.name], tracer_provider, tls)
            for config, sock in zip(configs, sockets, strict=True)
        ]
        asyncio.run(serve_all(pairs, sockets, ready, stop, tls))
    finally:
        for sock in sockets:
            sock.close()


async def serve_all(
    pairs: list[tuple[S, AgentHTTPServer]],
    sockets: list[socket.socket],
    ready: Callable[[list[S]], None] | None,
    stop: threading.Event | None,
    tls: ReloadingTLS | None = None,
) -> None:
    """Serve every server on its socket, start each agent's runner once all listen, call
    ``ready``, and run until SIGINT / SIGTERM (in the main thread) or ``stop``; then stop the
    servers and the runners. With ``tls``, its files are watched and reloaded meanwhile."""
    done = asyncio.Event()
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, done.set)
            installed.append(sig)
    servers = [server for _, server in pairs]
    tasks = [
        asyncio.create_task(server.serve(sockets=[sock]))
        for server, sock in zip(servers, sockets, strict=True)
    ]
    watcher = asyncio.create_task(_watch(stop, done))
    reloader = asyncio.create_task(tls.watch()) if tls is not None else None
    try:
        while not all(s.started for s in servers):
            if any(t.done() for t in tasks):
                raise RuntimeError("an agent's HTTP server stopped while starting")
            await asyncio.sleep(0.01)
        for agent, _ in pairs:
            agent.simulation.start()
        if ready is not None:
            ready([agent for agent, _ in pairs])
        ending = asyncio.create_task(done.wait())
        await asyncio.wait([ending, *tasks], return_when=asyncio.FIRST_COMPLETED)
        ending.cancel()
    finally:
        for server in servers:
            server.should_exit = True
        await asyncio.gather(*tasks, return_exceptions=True)
        watcher.cancel()
        if reloader is not None:
            reloader.cancel()
        for sig in installed:
            loop.remove_signal_handler(sig)
        for agent, _ in pairs:
            agent.simulation.stop()


async def _watch(stop: threading.Event | None, done: asyncio.Event) -> None:
    """Set ``done`` once ``stop`` is set (polled: it is a thread's event)."""
    if stop is None:
        return
    while not stop.is_set():
        await asyncio.sleep(0.05)
    done.set()
