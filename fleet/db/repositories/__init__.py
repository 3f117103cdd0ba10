"""The repositories of the fleet database, one module per aggregate; a
:class:`~fleet.db.uow.UnitOfWork` exposes one of each as an attribute."""

from fleet.db.repositories.approvals import ApprovalRepository
from fleet.db.repositories.audit import AuditRepository
from fleet.db.repositories.clusters import ClusterRepository
from fleet.db.repositories.fleets import FleetRepository
from fleet.db.repositories.gates import GateRepository
from fleet.db.repositories.leases import LeaseRepository
from fleet.db.repositories.releases import ReleaseRepository
from fleet.db.repositories.rollouts import RolloutRepository
from fleet.db.repositories.steps import StepRepository
from fleet.db.repositories.tokens import TokenRepository
from fleet.db.repositories.waves import WaveRepository

__all__ = [
    "ApprovalRepository",
    "AuditRepository",
    "ClusterRepository",
    "FleetRepository",
    "GateRepository",
    "LeaseRepository",
    "ReleaseRepository",
    "RolloutRepository",
    "StepRepository",
    "TokenRepository",
    "WaveRepository",
]
