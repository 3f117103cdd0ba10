"""The fleet's REST API: :func:`create_app` builds the FastAPI application over a
:class:`~fleet.service.context.FleetContext`; :func:`fleet.api.serve.serve` runs it with uvicorn
(``driftwave api``). Routes, error format, authentication and tracing: see :mod:`fleet.api.app`.

The application loads when first named (``from fleet.api import create_app``), so a module of
this package that the command line reads, such as the documents of :mod:`fleet.api.documents`,
comes without FastAPI, the routes and the database."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fleet.api.app import ApiConfigError, create_app

__all__ = ["ApiConfigError", "create_app"]


def __getattr__(name: str) -> object:
    """``fleet.api.NAME`` for the names of ``__all__``, imported from :mod:`fleet.api.app`."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module("fleet.api.app"), name)
