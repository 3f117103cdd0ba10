"""The metric names a PromQL expression reads, and the metric names driftwave's code exports,
so the fleet chart's alerts and the Grafana dashboard can be checked against the code.

:func:`metric_names` takes the identifiers of an expression that are neither a function or an
aggregation (followed by ``(``), nor a keyword, nor inside label matchers, ``by (...)``
groupings, range selectors, strings or Grafana ``$variables``. :func:`exported_metrics` asks the
real collectors: the fleet's (:class:`fleet.prometheus.FleetCollector` over a simulated fleet
whose scheduler has ticked, so the heartbeat gauges are present) and the agent's
(:class:`agent.server.metrics.AgentMetrics` of a simulated agent); a counter family counts with
its ``_total`` and ``_created`` series, as Prometheus scrapes it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from prometheus_client import CollectorRegistry

KEYWORDS = frozenset(
    {"by", "without", "on", "ignoring", "group_left", "group_right", "offset", "bool", "and",
     "or", "unless", "inf", "nan"}
)  # fmt: skip
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"' + r"|'(?:[^'\\]|\\.)*'")
_GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_IDENT = re.compile(r"(?<![\w.$])[A-Za-z_:][A-Za-z0-9_:]*")


def metric_names(expr: str) -> set[str]:
    """The metric names ``expr`` selects (see the module docstring)."""
    text = _STRING.sub('""', expr)
    text = re.sub(r"\$\{?\w+\}?", "", text)  # Grafana variables
    text = re.sub(r"\{[^}]*\}", " ", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", " ", text)  # ranges and subqueries
    text = _GROUPING.sub(" ", text)
    names = set()
    for match in _IDENT.finditer(text):
        word = match.group(0)
        if text[match.end() :].lstrip().startswith("(") or word.lower() in KEYWORDS:
            continue
        names.add(word)
    return names


def _names(registry: CollectorRegistry) -> set[str]:
    found: set[str] = set()
    for family in registry.collect():
        if family.type == "counter":
            found.update({f"{family.name}_total", f"{family.name}_created"})
        elif family.type != "histogram":  # a histogram's series are its _bucket, _sum, _count
            found.add(family.name)
        found.update(sample.name for sample in family.samples)
    return found


def exported_metrics(tmp: Path) -> set[str]:
    """Every metric name the fleet and the agent export (see the module docstring)."""
    from agent.server.metrics import AgentMetrics
    from agent.service import AgentService
    from agent.sim.member import member_world
    from fleet.prometheus import registry
    from fleet.service.scheduling.scheduler import Scheduler
    from tests.support.fleetsim import FixedMetrics, FleetHarness, ListBroker

    harness = FleetHarness(tmp, {"canary": ["canary-1"]}, nodes=2)
    Scheduler(harness.ctx, ListBroker(harness.ctx.now), FixedMetrics(), holder="t:1").tick()
    fleet = _names(registry(harness.ctx))
    harness.engine.dispose()
    member = AgentService(member_world("metrics", nodes=2), name="metrics")
    agent = _names(AgentMetrics(member).registry)
    return fleet | agent


def unexported(exprs: Iterable[str], exported: set[str]) -> dict[str, set[str]]:
    """The expressions that read a metric not in ``exported``, with those metrics."""
    return {e: missing for e in exprs if (missing := metric_names(e) - exported)}
