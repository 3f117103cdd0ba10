"""The benchmarks' argument parser: a bad argument is named and exits 1, as in ``driftwave``."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn


class Parser(argparse.ArgumentParser):
    """An argparse parser whose usage errors exit 1 instead of 2."""

    def error(self, message: str) -> NoReturn:
        """Print the usage and the error, then exit 1."""
        self.print_usage(sys.stderr)
        self.exit(1, f"{self.prog}: error: {message}\n")
