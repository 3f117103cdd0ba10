"""A busy machine in a test: CPU-bound processes running beside what the test measures, as on a
shared 2-core machine (the conditions under which a race shows)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def cpu_hogs(count: int = 2) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``count`` processes spinning on the CPU for as long as the block runs (yielded, so a test
    can check they ran all along)."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield hogs
    finally:
        for hog in hogs:
            hog.kill()
        for hog in hogs:
            hog.wait(10)
