"""Fixtures of the cloud tests: the packaged catalog, a fresh AMI catalog, a virtual clock."""

from __future__ import annotations

import pytest

from agent.catalog import Catalog
from agent.clock import VirtualClock
from agent.cloud.simulated import AMICatalog


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    """The packaged EC2 catalog (default zones, on-demand and spot, spot seed 1)."""
    return Catalog.packaged()


@pytest.fixture
def amis() -> AMICatalog:
    """A fresh EKS-optimized AMI catalog (tests publish into it)."""
    return AMICatalog.eks_optimized()


@pytest.fixture
def clock() -> VirtualClock:
    """A virtual clock at the epoch."""
    return VirtualClock()
