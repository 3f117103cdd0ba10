"""Reading a gate's metric: a Prometheus instant query, or a number in an HTTP JSON answer.

:class:`HttpMetricSource` is the :class:`~fleet.service.ports.MetricSource` adapter. A query
that fails (no answer, an error status, no sample, not a number) is a reading with ``error``
set, never an exception: the gate then fails that check and says why.
"""

from __future__ import annotations

import math
from typing import Any

import httpx

from fleet.domain.gates import MetricReading
from fleet.service.ports import MetricQuery


def _dotted(data: Any, path: str) -> Any:
    for part in path.split("."):
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            raise KeyError(part)
    return data


class HttpMetricSource:
    """Reads metrics over HTTP with a bounded timeout."""

    def __init__(self, timeout: float = 5.0, transport: httpx.BaseTransport | None = None) -> None:
        self._client = httpx.Client(timeout=timeout, transport=transport)

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()

    def read(self, check: MetricQuery) -> MetricReading:
        """See :meth:`fleet.service.ports.MetricSource.read`."""
        try:
            value = self._prometheus(check) if check.kind == "prometheus" else self._http(check)
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
            return MetricReading(check.name, None, f"{type(exc).__name__}: {exc}")
        if math.isnan(value):
            return MetricReading(check.name, None, "the query returned NaN")
        return MetricReading(check.name, value)

    def _prometheus(self, check: MetricQuery) -> float:
        url = check.url.rstrip("/") + "/api/v1/query"
        response = self._client.get(url, params={"query": check.query})
        response.raise_for_status()
        body = response.json()
        if body.get("status") != "success":
            raise ValueError(f"Prometheus answered {body.get('error') or body.get('status')}")
        data = body["data"]
        if data["resultType"] == "scalar":
            return float(data["result"][1])
        results = data["result"]
        if len(results) != 1:
            raise ValueError(f"the query returned {len(results)} series; it must return one")
        return float(results[0]["value"][1])

    def _http(self, check: MetricQuery) -> float:
        response = self._client.get(check.url)
        response.raise_for_status()
        value = _dotted(response.json(), check.field)
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise ValueError(f"{check.field} is not a number")
        return float(value)
