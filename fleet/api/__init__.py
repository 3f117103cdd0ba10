"""The fleet's REST API: :func:`create_app` builds the FastAPI application over a
:class:`~fleet.service.context.FleetContext`; :func:`serve` runs it with uvicorn (``driftwave
api``). Routes, error format, authentication and tracing: see :mod:`fleet.api.app`."""

from fleet.api.app import ApiConfigError, create_app
from fleet.api.serve import serve

__all__ = ["ApiConfigError", "create_app", "serve"]
