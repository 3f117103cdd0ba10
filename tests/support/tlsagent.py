"""Simulated agents served over HTTPS in a thread of the test (the real runner, the real TLS
context and its reload), for the TLS tests that need no separate process."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from agent.server import AgentConfig, RunningAgent, run_agents
from agent.server.tls import ReloadingTLS, TLSFiles
from common.auth import hash_token

TOKEN = "tls-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@contextmanager
def tls_agent(
    files: TLSFiles, *, name: str = "prod-1", interval: float = 0.1
) -> Iterator[tuple[RunningAgent, ReloadingTLS]]:
    """One small agent on a free loopback port serving HTTPS from ``files`` (looked at every
    ``interval`` seconds), until the block ends."""
    tls = ReloadingTLS(files, interval=interval)
    stop = threading.Event()
    started: list[RunningAgent] = []
    failed: list[BaseException] = []

    def serve() -> None:
        try:
            run_agents(
                [AgentConfig(name=name, port=0, nodes=3)],
                ready=started.extend,
                token_hashes={hash_token(TOKEN)},
                stop=stop,
                tls=tls,
            )
        except BaseException as exc:  # reported to the test below
            failed.append(exc)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not started:
        assert not failed, failed
        assert thread.is_alive(), "the agent stopped while starting"
        assert time.monotonic() < deadline, "the agent did not start"
        time.sleep(0.02)
    try:
        yield started[0], tls
    finally:
        stop.set()
        thread.join(30)


@contextmanager
def plain_agent(name: str = "prod-1") -> Iterator[RunningAgent]:
    """One small agent on a free loopback port serving plain HTTP, until the block ends."""
    stop = threading.Event()
    started: list[RunningAgent] = []
    thread = threading.Thread(
        target=run_agents,
        args=([AgentConfig(name=name, port=0, nodes=3)],),
        kwargs={"ready": started.extend, "token_hashes": {hash_token(TOKEN)}, "stop": stop},
        daemon=True,
    )
    thread.start()
    deadline = time.monotonic() + 60
    while not started:
        assert thread.is_alive(), "the agent stopped while starting"
        assert time.monotonic() < deadline, "the agent did not start"
        time.sleep(0.02)
    try:
        yield started[0]
    finally:
        stop.set()
        thread.join(30)
