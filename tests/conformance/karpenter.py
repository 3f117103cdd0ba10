"""Conformance to Karpenter's own tests: how a conformance test names the Karpenter test it
mirrors, how a deliberate departure is declared, and the per-suite counts the docs report
(docs/karpenter-compatibility.md).

Each module ``tests/conformance/test_*.py`` (except this package's own checks) is one suite: it
sets ``SUITE`` to one of :data:`SUITES` and holds one test function per Karpenter test it
mirrors. Every such function carries :func:`mirrors` (the Karpenter file and the test's name, as
Ginkgo spells it: the ``Describe``/``Context``/``It`` texts joined by `` / ``), and, where
driftwave behaves otherwise on purpose, :func:`departs` with the reason. A departure's test
asserts driftwave's own behaviour; it is never an xfail. The tests are written in our own words
and code: they state what Karpenter's test asserts, not how it is written.

:func:`suite_counts` reads the marks without running anything; ``test_report.py`` checks that the
docs' table says what they say (``python -m tests.conformance.karpenter`` prints the table).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

REPOSITORIES = {
    "core": ("sigs.k8s.io/karpenter", "v1.14.1"),
    "aws": ("github.com/aws/karpenter-provider-aws", "v1.14.1"),
}
"""The Go modules (and the release the agent follows) each suite's tests come from."""

SUITES: dict[str, str] = {
    "core-apis": "kubernetes-sigs/karpenter pkg/apis/v1",
    "core-scheduling": "kubernetes-sigs/karpenter pkg/controllers/provisioning/scheduling",
    "core-disruption": "kubernetes-sigs/karpenter pkg/controllers/disruption",
    "core-nodeclaim-disruption": (
        "kubernetes-sigs/karpenter pkg/controllers/nodeclaim/disruption, nodeclaim/expiration"
    ),
    "core-nodepool-hash": "kubernetes-sigs/karpenter pkg/controllers/nodepool/hash",
    "aws-apis": "aws/karpenter-provider-aws pkg/apis/v1",
    "aws-nodeclass-hash": "aws/karpenter-provider-aws pkg/controllers/nodeclass/hash",
    "aws-drift": "aws/karpenter-provider-aws drift (pkg/cloudprovider)",
}
"""Suite name → the Karpenter repository and package its tests come from."""

_HERE = Path(__file__).resolve().parent


def mirrors(source: str, name: str) -> Callable[[F], F]:
    """Mark a test as mirroring Karpenter's test ``name`` in ``source`` (a path in the
    repository of the module's suite, e.g. ``pkg/apis/v1/nodepool_validation_cel_test.go``)."""
    if not source.endswith("_test.go") or not name.strip():
        raise ValueError(f"mirrors({source!r}, {name!r}): name a Karpenter _test.go file and test")

    def mark(test: F) -> F:
        setattr(test, "karpenter_test", (source, name))  # noqa: B010 (F has no such attribute)
        return test

    return mark


def departs(reason: str) -> Callable[[F], F]:
    """Mark a test as a deliberate departure from Karpenter's test, for ``reason`` (what
    driftwave does instead and why; the test asserts driftwave's behaviour)."""
    if len(reason.strip()) < 20:
        raise ValueError("departs(): give the reason in a sentence")

    def mark(test: F) -> F:
        setattr(test, "karpenter_departure", reason.strip())  # noqa: B010
        return test

    return mark


@dataclass
class SuiteCount:
    """One suite's conformance tests: how many, and the departures with their reasons."""

    suite: str
    total: int = 0
    departures: list[tuple[str, str]] = field(default_factory=list)

    @property
    def agree(self) -> int:
        """Tests where driftwave does what Karpenter's test asserts."""
        return self.total - len(self.departures)


def conformance_modules() -> list[str]:
    """The suite modules, by import name."""
    return sorted(
        f"tests.conformance.{path.stem}"
        for path in _HERE.glob("test_*.py")
        if path.stem != "test_report"
    )


def suite_counts() -> dict[str, SuiteCount]:
    """Counts per suite, read from the marks of every suite module's test functions."""
    counts = {name: SuiteCount(name) for name in SUITES}
    for module_name in conformance_modules():
        module = importlib.import_module(module_name)
        suite = getattr(module, "SUITE", None)
        if suite not in SUITES:
            raise ValueError(f"{module_name}: SUITE must be one of {sorted(SUITES)}")
        for name, test in inspect.getmembers(module, inspect.isfunction):
            if not name.startswith("test_") or test.__module__ != module_name:
                continue
            mirrored = getattr(test, "karpenter_test", None)
            if mirrored is None:
                raise ValueError(f"{module_name}.{name} names no Karpenter test (@mirrors)")
            counts[suite].total += 1
            if reason := getattr(test, "karpenter_departure", None):
                counts[suite].departures.append((f"{mirrored[0]}: {mirrored[1]}", reason))
    return counts


def table(counts: dict[str, SuiteCount]) -> str:
    """The docs' table: one row per suite (agree / total / departures)."""
    rows = [
        "| Suite | Karpenter's tests from | Agree | Total | Deliberate departures |",
        "|---|---|---:|---:|---:|",
    ]
    for name, count in counts.items():
        rows.append(
            f"| {name} | {SUITES[name]} | {count.agree} | {count.total} | {len(count.departures)} |"
        )
    return "\n".join(rows)


def departure_list(counts: dict[str, SuiteCount]) -> str:
    """The docs' list of departures, each with its reason."""
    lines = [
        f"- **{name}**, {test}: {reason}"
        for name, count in counts.items()
        for test, reason in count.departures
    ]
    return "\n".join(lines) if lines else "- none"


if __name__ == "__main__":  # pragma: no cover - a maintainer's aid
    found = suite_counts()
    print(table(found))
    print()
    print(departure_list(found))


__all__ = ["SUITES", "SuiteCount", "departs", "mirrors", "suite_counts", "table"]
