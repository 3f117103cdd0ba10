"""The documents the agent service returns, as pydantic models: their contract.

The service builds plain JSON-ready dicts (cheap, and what both transports send); these models
describe them for the OpenAPI schema and for clients that want typed access
(``WaveDocument.model_validate(data)``). Field names are camelCase on the wire; the base, the
error document and the wave target are the fleet's too (:mod:`common.wire`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from common.wire import Document, WaveTarget
from common.wireversion import AgentIdentity

Phase = Literal[
    "progressing", "converged", "failed", "rolling-back", "rolled-back", "rollback-failed"
]


class HaltedPool(Document):
    """A NodePool whose drift is halted (repeated replacement failures)."""

    node_pool: str
    reason: str
    message: str


class NodeClassState(Document):
    """An EC2NodeClass: its ``amiSelectorTerms`` and the images they resolve to now."""

    name: str
    ami_selector_terms: list[dict[str, Any]]
    images: list[str]


class Clock(Document):
    """Whose time the agent's documents carry."""

    simulated: bool = Field(
        description="True: the cluster is a simulation and its clock is simulated time; "
        "False: the agent's clock is the wall clock (a real cluster)."
    )
    speed: float = Field(
        description="Simulated seconds per real second the simulation is advanced at when the "
        "machine keeps up (1 for the wall clock); a busy machine makes it run slower."
    )


class StatusDocument(Document):
    """``GET /v1/status``: the cluster now."""

    cluster: str
    kubernetes_version: str
    time: str = Field(description="The agent's clock, RFC 3339 UTC.")
    nodes: int = Field(description="Registered NodeClaims.")
    nodes_by_image: dict[str, int]
    drifted: int
    disrupting: int = Field(description="NodeClaims being deleted or in a disruption under way.")
    pending_pods: int
    launch_failures: int = Field(
        description="NodeClaims deleted before their instance launched, last 30 minutes."
    )
    registration_failures: int = Field(
        description="NodeClaims launched but deleted before they initialized (never joined or "
        "never Ready), last 30 minutes."
    )
    drift_halted: list[HaltedPool]
    node_classes: list[NodeClassState]
    active_wave: str | None = Field(description="The latest wave under way, if any.")
    cost_per_hour: float = Field(description="USD per hour of the instances billed now.")
    clock: Clock
    agent: AgentIdentity | None = Field(
        default=None,
        description="Which release the agent is and what it can do (absent from an agent of "
        "release 0.1, which predates it).",
    )


class PoolBudget(Document):
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


class Progress(Document):
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


class Observation(Document):
    """What the cluster shows of a wave now, read afresh on every request."""

    expected: Literal["target", "previous"] = Field(
        description="What the wave's classes should carry: the wave's target, or, once it is "
        "rolled back, the previous selection its rollback put back."
    )
    holds: bool = Field(
        description="Every class carries the expected selection, the control plane the target "
        "version (if any), and every node of the wave's NodePools is initialized on an image "
        "its class selects, none drifted or being disrupted."
    )
    reason: str = Field(description="What does not hold (empty when it holds).")
    kubernetes_version: str
    images: list[str] = Field(description="The images the wave's classes select now.")
    nodes: int
    on_expected: int
    drifted: int
    disrupting: int
    launch_failures: int = Field(
        description="NodeClaims of the wave's NodePools deleted before launching, since the "
        "wave was applied."
    )
    registration_failures: int = Field(
        description="NodeClaims of the wave's NodePools launched but deleted before they "
        "initialized, since the wave was applied."
    )
    at: str = Field(description="When it was observed (RFC 3339, the agent's clock).")


class PreviousClass(Document):
    """How an EC2NodeClass stood before the wave."""

    ami_selector_terms: list[dict[str, Any]]
    ami_family: str | None


class PhaseChange(Document):
    """One phase change of a wave, at the agent's time."""

    phase: Phase
    at: str
    reason: str


class WaveDocument(Document):
    """``GET /v1/waves/{id}``: a wave and its progress."""

    id: str
    phase: Phase
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


class PlannedClass(Document):
    """What a target would make of one EC2NodeClass."""

    name: str
    ami_selector_terms: list[dict[str, Any]]
    images: list[str]
    target_ami_selector_terms: list[dict[str, Any]]
    target_images: list[str]
    error: str | None = Field(description="Why the target terms would resolve to no image.")


class PlanDocument(Document):
    """``POST /v1/plan``: the drift preview, and what a target would do (when one is given)."""

    time: str
    kubernetes_version: str
    preview: dict[str, Any] = Field(
        description="The drift preview: drifted nodes, replace or hold (and why), waves, ETA."
    )
    target: WaveTarget | None
    kubernetes_version_target: str | None = None
    node_classes: list[PlannedClass] | None = None
    target_images: list[str] | None = None
    error: str | None = None
    would_drift: dict[str, int] | None = Field(default=None, description="Nodes per NodePool.")
    drifting: list[dict[str, Any]] | None = None
    waves: list[dict[str, Any]] | None = Field(
        default=None, description="Replacement waves the NodePools' Drifted budgets allow."
    )
    eta_seconds: float | None = None
    eta: str | None = None
    replace_seconds_assumed: float | None = None


class Health(Document):
    """``GET /healthz`` and ``GET /readyz``."""

    status: Literal["ok", "failing", "not-ready"]
    cluster: str
