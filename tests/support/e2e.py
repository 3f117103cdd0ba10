"""What the end-to-end tests share: Debian's Chromium driven by Playwright (nothing is
downloaded), where screenshots go, and ``driftwave demo`` run as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import Browser, Page, sync_playwright

from tests.support.required import unavailable

CHROMIUM = Path("/usr/bin/chromium")
ROOT = Path(__file__).resolve().parents[2]
SHOTS = Path(os.environ.get("DRIFTWAVE_ARTIFACTS", ROOT / "test-artifacts")) / "screenshots"
DRIFTWAVE = Path(sys.executable).parent / "driftwave"


@contextmanager
def chromium() -> Iterator[Browser]:
    """Debian's headless Chromium for the block. Missing, the test is skipped, or fails when
    ``DRIFTWAVE_REQUIRE_SERVICES`` is set (as in CI: ``.ci/run`` installs it)."""
    if not CHROMIUM.exists():
        message = (
            "Debian's chromium is not installed (.ci/run installs it: apt-get install chromium)"
        )
        unavailable(message)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"]
        )
        try:
            yield launched
        finally:
            launched.close()


def screenshot(page: Page, name: str) -> None:
    """The whole page as ``SHOTS/NAME.png``."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def run_demo(tmp_path: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``driftwave demo ARGS --json --workdir TMP/demo`` from ``tmp_path``, on a 200-column
    terminal width, as a user runs it (the console script, a process of its own)."""
    return subprocess.run(
        [str(DRIFTWAVE), "demo", *args, "--json", "--workdir", str(tmp_path / "demo")],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=tmp_path,
        env={**os.environ, "COLUMNS": "200"},
    )
