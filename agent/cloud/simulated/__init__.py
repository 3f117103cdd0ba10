"""The simulated cloud adapter: ``SimulatedCloud``, its AMI catalog, faults and records.

Defaults (documented in :mod:`agent.cloud.simulated.cloud`): the instance is running 10 s after
``create`` and its kubelet registers (``on_boot``) 30 s after; termination is immediate; an
offering that hit insufficient capacity stays unavailable for 3 minutes; instance ids come from
seed 1. Prices come from the catalog given (its spot prices from the catalog's seeded model).
"""

from agent.cloud.simulated.amiresolve import AMIResolutionError, resolve_amis
from agent.cloud.simulated.amis import AMI, EKS_FAMILIES, AMICatalog, AMIFamily
from agent.cloud.simulated.cloud import (
    DEFAULT_BOOT_LATENCY,
    DEFAULT_LAUNCH_LATENCY,
    DEFAULT_SEED,
    DEFAULT_TERMINATION_LATENCY,
    UNREGISTERED_TAINT,
    SimulatedCloud,
)
from agent.cloud.simulated.faults import CapacityShortage, Faults, LaunchFailure
from agent.cloud.simulated.records import BootedInstance, CloudEvent, SimulatedInstance

__all__ = [
    "AMI",
    "DEFAULT_BOOT_LATENCY",
    "DEFAULT_LAUNCH_LATENCY",
    "DEFAULT_SEED",
    "DEFAULT_TERMINATION_LATENCY",
    "EKS_FAMILIES",
    "UNREGISTERED_TAINT",
    "AMICatalog",
    "AMIFamily",
    "AMIResolutionError",
    "BootedInstance",
    "CapacityShortage",
    "CloudEvent",
    "Faults",
    "LaunchFailure",
    "SimulatedCloud",
    "SimulatedInstance",
    "resolve_amis",
]
