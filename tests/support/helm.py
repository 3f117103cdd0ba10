"""The real ``helm`` (built by ``make tools`` into ``.tools/bin``) on the agent's chart (``CHART``)
or the fleet's (``FLEET_CHART``: ``Helm(home, chart=FLEET_CHART)``).

:class:`Helm` runs ``helm lint``, ``helm template`` (its output parsed into objects) and ``helm
install`` / ``uninstall`` against a kubeconfig. Values go in as a YAML file (``-f``), so their
types are what the test wrote. Helm's cache, configuration and data folders, and its
``HOME``, are a folder of the test's own, and the environment it runs in is built from nothing
but ``PATH``, so neither the user's helm repositories and plugins nor their kubeconfig are read
or written. A failing command raises :class:`HelmError` with the command and what helm said.

:func:`require_helm` is the tests' door: the binary, or (when ``make tools`` has not built it)
a failed test under ``DRIFTWAVE_REQUIRE_SERVICES=1`` (CI) and a skipped one elsewhere.
"""

from __future__ import annotations

import itertools
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.support.required import unavailable

ROOT = Path(__file__).resolve().parents[2]
BINARY = ROOT / ".tools" / "bin" / "helm"
CHART = ROOT / "deploy" / "helm" / "driftwave-agent"
FLEET_CHART = ROOT / "deploy" / "helm" / "driftwave-fleet"
KUBE_VERSION = "1.31.0"
"""The Kubernetes version ``lint`` and ``template`` render for (the version the rendered objects
are validated against; a helm built from source would otherwise assume 1.20, below the
chart's ``kubeVersion``). ``install`` asks the API server."""
TIMEOUT = 300.0
"""Seconds any one helm command may take (an install's own ``--timeout`` is shorter)."""


class HelmError(RuntimeError):
    """A helm command failed: the command, its exit status and what it printed."""

    def __init__(self, args: list[str], returncode: int, output: str) -> None:
        self.command = args
        self.returncode = returncode
        self.output = output
        super().__init__(f"helm {' '.join(args)} exited {returncode}:\n{output.strip()}")


@dataclass
class Helm:
    """``helm`` with a home of its own in ``home`` (see the module docstring)."""

    home: Path
    binary: Path = BINARY
    chart: Path = CHART
    _files: itertools.count[int] = field(default_factory=itertools.count)

    def __post_init__(self) -> None:
        for sub in ("cache", "config", "data", "values"):
            (self.home / sub).mkdir(parents=True, exist_ok=True)

    def env(self, kubeconfig: Path | None = None) -> dict[str, str]:
        """The environment helm runs in: its folders under ``home``, no inherited settings."""
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "HELM_CACHE_HOME": str(self.home / "cache"),
            "HELM_CONFIG_HOME": str(self.home / "config"),
            "HELM_DATA_HOME": str(self.home / "data"),
            # helm reads a kubeconfig even to render; never the user's
            "KUBECONFIG": str(kubeconfig or self.home / "no-kubeconfig"),
        }

    def run(self, *args: str, kubeconfig: Path | None = None) -> str:
        """Run ``helm ARGS``; what it printed on stdout. Raises :class:`HelmError`."""
        argv = list(args)
        if kubeconfig is not None:
            argv += ["--kubeconfig", str(kubeconfig)]
        try:
            done = subprocess.run(
                [str(self.binary), *argv],
                capture_output=True,
                text=True,
                env=self.env(kubeconfig),
                cwd=self.home,
                timeout=TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise HelmError(argv, -1, f"timed out after {TIMEOUT:.0f}s") from exc
        if done.returncode != 0:
            raise HelmError(argv, done.returncode, done.stderr + done.stdout)
        return done.stdout

    def values_file(self, values: dict[str, Any]) -> Path:
        """``values`` as a YAML file helm reads with ``-f``."""
        path = self.home / "values" / f"values-{next(self._files)}.yaml"
        path.write_text(yaml.safe_dump(values, sort_keys=False))
        return path

    def lint(self, values: dict[str, Any], *, strict: bool = True) -> str:
        """``helm lint`` (``--strict``: warnings fail too); its report."""
        args = ["lint", str(self.chart), "-f", str(self.values_file(values))]
        args += ["--kube-version", KUBE_VERSION]
        return self.run(*args, *(["--strict"] if strict else []))

    def template(
        self,
        values: dict[str, Any],
        *,
        release: str = "driftwave-agent",
        namespace: str = "driftwave",
        include_crds: bool = False,
    ) -> list[dict[str, Any]]:
        """The objects ``helm template`` renders, in its order."""
        text = self.rendered(
            values, release=release, namespace=namespace, include_crds=include_crds
        )
        return [doc for doc in yaml.safe_load_all(text) if doc]

    def rendered(
        self,
        values: dict[str, Any],
        *,
        release: str = "driftwave-agent",
        namespace: str = "driftwave",
        include_crds: bool = False,
    ) -> str:
        """What ``helm template`` prints (the golden files' text)."""
        args = ["template", release, str(self.chart), "--namespace", namespace]
        args += ["-f", str(self.values_file(values)), "--kube-version", KUBE_VERSION]
        if include_crds:
            args.append("--include-crds")
        return self.run(*args)

    def install(
        self,
        release: str,
        namespace: str,
        values: dict[str, Any],
        *,
        kubeconfig: Path,
        skip_crds: bool = False,
        wait: bool = True,
        timeout: str = "120s",
        upgrade: bool = False,
    ) -> str:
        """``helm install`` (``upgrade``: ``helm upgrade``) into ``namespace`` (which must
        exist); helm's report.

        ``wait``: until the Deployment's replicas are available and the other objects exist."""
        verb = "upgrade" if upgrade else "install"
        args = [verb, release, str(self.chart), "--namespace", namespace]
        args += ["-f", str(self.values_file(values)), "--timeout", timeout]
        if skip_crds:
            args.append("--skip-crds")
        if wait:
            args.append("--wait")
        return self.run(*args, kubeconfig=kubeconfig)

    def uninstall(self, release: str, namespace: str, *, kubeconfig: Path) -> str:
        """``helm uninstall --wait``: the release's objects are gone when it returns."""
        args = ["uninstall", release, "--namespace", namespace, "--wait", "--timeout", "120s"]
        return self.run(*args, kubeconfig=kubeconfig)

    def manifest(self, release: str, namespace: str, *, kubeconfig: Path) -> list[dict[str, Any]]:
        """The objects helm recorded for an installed release (``helm get manifest``)."""
        out = self.run("get", "manifest", release, "--namespace", namespace, kubeconfig=kubeconfig)
        return [doc for doc in yaml.safe_load_all(out) if doc]


def missing_helm() -> str | None:
    """Why helm cannot run here (None: it can)."""
    if not BINARY.is_file():
        return "helm not built (make tools; needs Go)"
    return None


def require_helm(home: Path) -> Helm:
    """A :class:`Helm` with its home in ``home``; without the binary, fail the test in CI
    (``DRIFTWAVE_REQUIRE_SERVICES``) and skip it elsewhere, with the reason."""
    if reason := missing_helm():
        unavailable(reason)
    return Helm(home)
