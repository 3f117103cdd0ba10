"""Run Python code in a fresh interpreter from the project's root: what a new process imports
and does, undisturbed by the modules the test process has loaded already."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_fresh(
    code: str, *args: str, env: Mapping[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` (``python -c``) with ``args`` and ``env`` (default: this process's); its
    exit code and captured output, as text."""
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=None if env is None else dict(env),
        timeout=timeout,
        check=False,
    )
