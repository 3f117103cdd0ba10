"""httpx, which the remote port, sign-in and login speak HTTP with, imported without its
command-line tool.

``import httpx`` imports ``httpx._main``, the ``httpx`` command (click, Pygments' lexers, rich's
progress bars and syntax highlighting), whenever those are installed, as they are beside
typer: more than half of what importing httpx costs, on every command that goes through the
fleet API, which never runs that tool. Importing ``httpx`` from here (:func:`imported`) refuses
that module while httpx loads (httpx then names a ``main`` that says its tool is not
installed) and frees the name at once, so a later ``import httpx._main`` gets the real one.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import TYPE_CHECKING

TOOL = "httpx._main"
"""httpx's command-line tool, which the command line never runs."""


def imported() -> ModuleType:
    """The httpx module: imported now, without :data:`TOOL`, unless it already was."""
    loaded = sys.modules.get("httpx")
    if loaded is not None:
        return loaded
    refused = TOOL not in sys.modules
    if refused:
        sys.modules[TOOL] = None  # type: ignore[assignment]  # an import of it raises ImportError
    try:
        return importlib.import_module("httpx")
    finally:
        if refused:
            del sys.modules[TOOL]


if TYPE_CHECKING:  # the same module, typed
    import httpx as httpx
else:
    httpx = imported()
