"""Fixtures of the conformance suites: the Karpenter oracle (one process per session) and the
real control plane's admin client and namespaces, as the differential and kube tests have them."""

from __future__ import annotations

from tests.differential.conftest import karpenter_oracle
from tests.integration.kube.conftest import cluster, namespace, rest

__all__ = ["cluster", "karpenter_oracle", "namespace", "rest"]
