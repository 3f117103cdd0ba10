"""The fleet the startup benchmark reads: a prepared embedded (SQLite) fleet with one rollout,
and the fleet API served over it, as the docs set them up.

:func:`prepared_fleet` applies ``examples/fleet/fleet.yaml`` and starts a rollout of
``examples/fleet/release.yaml`` on a new SQLite database (``DRIFTWAVE_DATABASE_URL``), then
starts ``driftwave api`` on a free loopback port with a token of its own (``--token-file``, an
admin, as docs/operations.md describes) and adds a context naming that API and that token
(``driftwave config set-context --token-file``) to a config file of its own
(``DRIFTWAVE_CONFIG``): a command given ``--context api`` then goes through the API, signed in,
and one without a context reads the database here. The server stops when the block ends.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

CONTEXT = "api"
"""The context naming the benchmark's fleet API."""
FLEET = Path("examples/fleet/fleet.yaml")
RELEASE = Path("examples/fleet/release.yaml")
READY_SECONDS = 60.0
"""How long the API server may take to answer ``/healthz`` (any answer: without a scheduler it
is 503 while the rollout is live)."""


class SetupError(RuntimeError):
    """Preparing the fleet or starting its API failed (the message says which command)."""


@dataclass(frozen=True)
class Fleet:
    """The prepared fleet: the environment every timed command runs with, and its rollout."""

    env: Mapping[str, str]
    rollout: str
    """The id of the fleet's one rollout."""


def _run(cli: Sequence[str], args: Sequence[str], env: Mapping[str, str], root: Path) -> str:
    done = subprocess.run(
        [*cli, *args], cwd=root, env=env, capture_output=True, text=True, timeout=120
    )
    if done.returncode != 0:
        raise SetupError(f"driftwave {' '.join(args)} exited {done.returncode}: {done.stderr}")
    return done.stdout


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _wait_ready(url: str, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SetupError(f"driftwave api exited {server.returncode}: {log.read_text()}")
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=2):
                return
        except urllib.error.HTTPError:
            return  # it answers: 503 says no scheduler runs for the live rollout, as here
        except (urllib.error.URLError, OSError):
            time.sleep(0.2)
    raise SetupError(f"driftwave api did not answer {url}/healthz in {READY_SECONDS:g} s")


@contextmanager
def prepared_fleet(cli: Sequence[str], env: Mapping[str, str], root: Path) -> Iterator[Fleet]:
    """The fleet of the module docstring, in a temporary folder, its API served meanwhile."""
    with tempfile.TemporaryDirectory(prefix="startup-fleet-") as folder:
        work = Path(folder)
        fleet_env = {
            **{k: v for k, v in env.items() if k != "DRIFTWAVE_CONTEXT"},
            "DRIFTWAVE_DATABASE_URL": f"sqlite:///{work / 'fleet.db'}",
            "DRIFTWAVE_CONFIG": str(work / "config"),
        }
        _run(cli, ["fleet", "apply", str(FLEET), "--reason", "startup benchmark"], fleet_env, root)
        _run(cli, ["rollout", "start", str(RELEASE)], fleet_env, root)
        listed = json.loads(_run(cli, ["rollout", "list", "-o", "json"], fleet_env, root))
        token = work / "token"
        token.write_text(secrets.token_urlsafe(24), encoding="utf-8")
        os.chmod(token, 0o600)
        port = _free_port()
        log = work / "api.log"
        serve = ("api", "--host", "127.0.0.1", "--port", str(port), "--token-file", str(token))
        with log.open("wb") as out:
            server = subprocess.Popen(
                [*cli, *serve],
                cwd=root,
                env=fleet_env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            url = f"http://127.0.0.1:{port}"
            _wait_ready(url, server, log)
            _run(
                cli,
                ["config", "set-context", CONTEXT, "--server", url, "--token-file", str(token)],
                fleet_env,
                root,
            )
            yield Fleet(fleet_env, str(listed[0]["id"]))
        finally:
            server.terminate()
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
