"""``/v1/waves/{id}``: what the fleet sends (the wave request, the rollback request) and the wave
document the agent answers with (its phase, progress and observation of the cluster now); and
``GET /v1/status?wave={id}``, the status with one wave's document in it."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from common.kubemodel import KubeModel, matching, rule_error
from common.names import KUBERNETES_VERSION, dns_subdomain_problem
from common.selectors import AMISelectorTerm
from common.wire.base import Answer
from common.wire.observation import Observation
from common.wire.phases import ReadPhase
from common.wire.status import Clock, HaltedPool, StatusDocument
from common.wire.target import NodeClassSelector, WaveTarget

_Label = Annotated[str, Field(min_length=1, max_length=253)]


class WaveRequest(KubeModel):
    """The body of ``PUT /v1/waves/{id}``: apply ``target`` to the selected EC2NodeClasses.

    ``rollout`` and ``release`` are the fleet's names for the change, kept with the wave."""

    target: WaveTarget
    node_classes: NodeClassSelector | None = None
    rollout: _Label | None = None
    release: _Label | None = None


class PreviousSelection(KubeModel):
    """How one EC2NodeClass stood before a wave: its ``amiSelectorTerms`` and ``amiFamily``."""

    ami_selector_terms: Annotated[list[AMISelectorTerm], Field(min_length=1, max_length=30)]
    ami_family: Annotated[str, Field(min_length=1, max_length=63)] | None = None


class RollbackRequest(KubeModel):
    """The optional body of ``POST /v1/waves/{id}/rollback``: what the caller recorded of the
    wave when it was applied (the fleet keeps it per step), so a wave can be rolled back even by
    an agent that has no record of it. Ignored when the agent knows the wave."""

    previous: Annotated[dict[str, PreviousSelection], Field(min_length=1, max_length=100)]
    kubernetes_version_before: (
        Annotated[str, matching(KUBERNETES_VERSION, "a version such as 1.31")] | None
    ) = None
    images_before: Annotated[list[_Label], Field(max_length=100)] = Field(default_factory=list)
    target: WaveTarget | None = None
    rollout: _Label | None = None
    release: _Label | None = None

    @model_validator(mode="after")
    def _valid_names(self) -> RollbackRequest:
        for name in self.previous:
            problem = dns_subdomain_problem(name)
            if problem:
                raise rule_error(problem, f"previous.{name}")
        return self


class PoolBudget(Answer):
    """One NodePool's ``Drifted`` budget now, counted as Karpenter counts it."""

    node_pool: str
    nodes: int = Field(description="Initialized NodeClaims whose instance is not terminating.")
    disrupting: int = Field(
        description="Of those: Node not Ready, marked for disruption or being deleted."
    )
    limit: int = Field(description="What the active budgets allow for Drifted.")
    allowed: int = Field(description="limit - disrupting, at least 0.")
    drifted_waiting: int = Field(description="Drifted NodeClaims nobody is disrupting yet.")
    waiting_on_budget: bool = Field(description="drifted nodes wait and allowed is 0.")


class Progress(Answer):
    """How far a wave's NodePools are."""

    nodes: int
    on_target: int
    drifted: int
    disrupting: int
    pending_pods: int
    launch_failures: int
    registration_failures: int
    drift_halted: list[HaltedPool]
    nodes_replaced: int
    budgets: list[PoolBudget] = Field(
        default_factory=list,
        description="Each NodePool's Drifted budget now (empty from an agent that predates it).",
    )
    waiting_on_budget: bool = Field(
        default=False, description="A NodePool's budget holds drifted nodes back."
    )
    remaining: int | None = Field(
        default=None, description="NodeClaims not being deleted that are not on target."
    )
    eta_seconds: float | None = Field(
        default=None,
        description="remaining nodes replaced limit at a time, each round as long as the "
        "wave's rounds took so far (or the assumed time); None when a budget allows nothing.",
    )
    eta_basis: Literal["measured", "assumed"] | None = None


class PreviousClass(Answer):
    """How an EC2NodeClass stood before the wave."""

    ami_selector_terms: list[dict[str, object]]
    ami_family: str | None


class PhaseChange(Answer):
    """One phase change of a wave, at the agent's time."""

    phase: ReadPhase
    at: str
    reason: str


class WaveDocument(Answer):
    """``GET /v1/waves/{id}``: a wave and its progress."""

    id: str
    phase: ReadPhase
    target: WaveTarget
    node_classes: list[str]
    node_pools: list[str]
    previous: dict[str, PreviousClass]
    kubernetes_version_before: str
    images_before: list[str]
    target_images: list[str]
    applied_at: str
    converged_at: str | None
    finished_at: str | None
    elapsed_seconds: float = Field(
        description="Seconds on the cluster's clock (simulated time on a simulated cluster) "
        "from appliedAt to convergedAt once converged, to finishedAt once it stopped "
        "otherwise, to now while under way."
    )
    reason: str
    rollout: str | None
    release: str | None
    history: list[PhaseChange]
    progress: Progress
    observed: Observation
    clock: Clock


class StatusWithWave(StatusDocument):
    """``GET /v1/status?wave={id}`` from an agent with the ``status-with-wave`` capability: the
    status, and the wave's document read in the same pass (``wave``: null when the agent does not
    know the wave). An agent without the capability answers the status alone; a reader knows
    which it got from the answer's own ``agent.capabilities``."""

    wave: WaveDocument | None = Field(
        default=None, description="The wave asked for, or null when the agent does not know it."
    )
