"""Gate metric readings over real loopback HTTP: Prometheus instant queries and JSON fields."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fleet.metrics import HttpMetricSource
from fleet.service.ports import MetricQuery
from tests.support.jsonserver import JsonServer


@pytest.fixture
def server() -> Iterator[JsonServer]:
    with JsonServer().running() as running:
        yield running


def prom(url: str) -> MetricQuery:
    return MetricQuery("errors", "prometheus", url, query="sum(rate(errors[5m]))")


def test_a_prometheus_vector_with_one_sample_is_read(server: JsonServer) -> None:
    server.routes["/api/v1/query"] = (
        200,
        {
            "status": "success",
            "data": {
                "resultType": "vector",
                "result": [{"metric": {}, "value": [1700000000, "0.25"]}],
            },
        },
    )
    reading = HttpMetricSource().read(prom(server.url))
    assert (reading.value, reading.error) == (0.25, None)
    assert server.requests[-1][1]["query"] == ["sum(rate(errors[5m]))"]


def test_a_prometheus_scalar_is_read(server: JsonServer) -> None:
    server.routes["/api/v1/query"] = (
        200,
        {"status": "success", "data": {"resultType": "scalar", "result": [1700000000, "3"]}},
    )
    assert HttpMetricSource().read(prom(server.url)).value == 3.0


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        ((200, {"status": "success", "data": {"resultType": "vector", "result": []}}), "0 series"),
        ((200, {"status": "error", "error": "parse error"}), "parse error"),
        ((503, {"status": "error"}), "503"),
        (
            (200, {"status": "success", "data": {"resultType": "scalar", "result": [1, "NaN"]}}),
            "NaN",
        ),
    ],
)
def test_a_failed_prometheus_query_is_a_reading_with_an_error(
    server: JsonServer, answer: tuple[int, object], error: str
) -> None:
    server.routes["/api/v1/query"] = answer
    reading = HttpMetricSource().read(prom(server.url))
    assert reading.value is None
    assert reading.error is not None
    assert error in reading.error


def test_an_http_json_field_is_read_by_its_dotted_path(server: JsonServer) -> None:
    server.routes["/slo"] = (200, {"data": {"burn": [{"rate": 1.5}]}})
    query = MetricQuery("slo", "http", server.url + "/slo", field="data.burn.0.rate")
    assert HttpMetricSource().read(query).value == 1.5
    missing = MetricQuery("slo", "http", server.url + "/slo", field="data.nothing")
    assert "KeyError" in (HttpMetricSource().read(missing).error or "")


def test_an_unreachable_metric_endpoint_is_an_error_reading() -> None:
    query = MetricQuery("slo", "http", "http://127.0.0.1:9/slo", field="x")
    reading = HttpMetricSource(timeout=1.0).read(query)
    assert reading.value is None
    assert reading.error
