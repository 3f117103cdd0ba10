"""``driftwave.io/v1alpha1`` Release: what to roll out (an AMI pin or a Kubernetes version) and
how (the rings in order, waves, soak, gates, failure budget).

Defaults, per ring: ``maxConcurrency: 1`` (when neither it nor ``growing`` is set), ``soak: 10m``,
``requireApproval: false``, ``failureBudget: 0``, ``onFailure: rollback``; gates
``convergenceTimeout: 30m``, ``maxPendingPods: 0``, ``maxLaunchFailures: 0``, no metrics. Growing
waves default to ``initial: 1``, ``factor: 2``, no ``max``. Release-wide: ``onUnreachable: fail``
(an unreachable cluster counts against its ring's budget), ``onClusterAdded: ignore`` (a cluster
added to the Fleet during the rollout is left alone; ``include`` adds it to its ring if that ring
has not finished). Clusters removed from the Fleet during a rollout are always skipped.
Without ``spec.clusters`` every cluster of the Fleet takes part; without ``target.nodeClasses``
the AMI pin applies to every EC2NodeClass.

Rules that need the Fleet too (the rings exist and are listed in the Fleet's order) are checked
by :func:`fleet.domain.manifests.release_fleet_findings`.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from common.kubemodel import KubeModel, ObjectMeta, matching, rule_error
from common.names import KUBERNETES_VERSION, dns_subdomain_problem
from common.selectors import AMISelectorTerm
from common.wire.target import check_one_target
from fleet.domain.fields import (
    DnsLabel,
    Duration,
    HttpUrl,
    Labels,
    count_or_percent,
    duration_of,
)

JSON_FIELD = r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+|\[[0-9]+\])*$"


class TargetNodeClasses(KubeModel):
    """``target.nodeClasses``: the EC2NodeClasses the AMI pin applies to (names and/or labels;
    a class is selected when it matches every part given). The manifest's rules are stricter
    than the wire's (it selects something, names are unique, labels are label-shaped); where it
    crosses to an agent it becomes the wire's :class:`common.wire.target.NodeClassSelector`, in
    one place (:func:`fleet.service.steps.snapshot.wave_request`)."""

    names: Annotated[list[str], Field(min_length=1)] | None = None
    match_labels: Labels | None = None

    @field_validator("names")
    @classmethod
    def _names(cls, names: list[str] | None) -> list[str] | None:
        for name in names or []:
            problem = dns_subdomain_problem(name)
            if problem:
                raise ValueError(f"{problem} (rule: EC2NodeClass names are DNS subdomains)")
        if names is not None and len(set(names)) != len(names):
            raise ValueError("a name is listed twice (rule: names are unique)")
        return names

    @model_validator(mode="after")
    def _selects(self) -> TargetNodeClasses:
        if self.names is None and not self.match_labels:
            raise rule_error(
                "the selector selects nothing: set names and/or matchLabels, or remove "
                "nodeClasses to pin every EC2NodeClass"
            )
        return self


class Target(KubeModel):
    """``spec.target``: exactly one of ``amiSelectorTerms`` (an AMI pin, with the same rules as
    an EC2NodeClass's field) or ``kubernetesVersion``."""

    ami_selector_terms: (
        Annotated[list[AMISelectorTerm], Field(min_length=1, max_length=30)] | None
    ) = None
    node_classes: TargetNodeClasses | None = None
    kubernetes_version: (
        Annotated[str, matching(KUBERNETES_VERSION, 'a Kubernetes minor version such as "1.31"')]
        | None
    ) = None

    @model_validator(mode="after")
    def _one_target(self) -> Target:
        check_one_target(
            self.ami_selector_terms, self.kubernetes_version, "a release rolls out one target"
        )
        if self.node_classes is not None and self.kubernetes_version is not None:
            raise rule_error(
                "nodeClasses only applies to an amiSelectorTerms target (rule: a Kubernetes "
                "version upgrade covers the whole cluster)",
                "nodeClasses",
            )
        return self


class ClusterSelector(KubeModel):
    """``spec.clusters``: only Fleet clusters carrying every one of these labels take part."""

    match_labels: Annotated[Labels, Field(min_length=1)]


class Growing(KubeModel):
    """``growing``: waves of ``initial``, then ``factor`` times more each wave, capped at ``max``
    (no cap by default): ``{initial: 1, factor: 2, max: 8}`` gives 1, 2, 4, 8, 8, ..."""

    initial: Annotated[int, Field(ge=1)] = 1
    factor: int = 2
    max: Annotated[int, Field(ge=1)] | None = None

    @field_validator("factor")
    @classmethod
    def _grows(cls, factor: int) -> int:
        if factor < 2:
            raise ValueError(
                f"factor {factor} does not grow the waves (rule: factor >= 2; for waves of one "
                "size use maxConcurrency)"
            )
        return factor

    @model_validator(mode="after")
    def _cap(self) -> Growing:
        if self.max is not None and self.max < self.initial:
            raise rule_error(
                f"max {self.max} is below initial {self.initial} (rule: max >= initial)", "max"
            )
        return self


class PrometheusQuery(KubeModel):
    """``prometheus``: an instant PromQL query whose single value is compared."""

    url: HttpUrl
    query: Annotated[str, Field(min_length=1)]


class HttpQuery(KubeModel):
    """``http``: a GET returning JSON; ``field`` (``data.burnRate``, ``items[0].v``) is compared."""

    url: HttpUrl
    field: Annotated[str, matching(JSON_FIELD, "a JSON field path such as data.burnRate")]


class MetricGate(KubeModel):
    """``gates.metrics[]``: a number read after the soak that must stay within min/max."""

    name: DnsLabel
    prometheus: PrometheusQuery | None = None
    http: HttpQuery | None = None
    max: float | None = None
    min: float | None = None

    @model_validator(mode="after")
    def _rules(self) -> MetricGate:
        if (self.prometheus is None) == (self.http is None):
            raise rule_error("set exactly one of prometheus or http (rule: one query per metric)")
        if self.max is None and self.min is None:
            raise rule_error("set max and/or min (rule: a metric gate needs a bound)", "max")
        if self.max is not None and self.min is not None and self.min > self.max:
            raise rule_error(f"min {self.min} is above max {self.max} (rule: min <= max)", "min")
        return self


class Gates(KubeModel):
    """``gates``: what every cluster of a wave must show before the rollout goes on."""

    convergence_timeout: Duration = "30m"
    """Every node of the cluster on the target within this time."""
    max_pending_pods: Annotated[int, Field(ge=0)] = 0
    max_launch_failures: Annotated[int, Field(ge=0)] = 0
    """The longest allowed streak of launch/registration failures."""
    metrics: list[MetricGate] = Field(default_factory=list)

    @field_validator("convergence_timeout")
    @classmethod
    def _positive(cls, value: str) -> str:
        if duration_of(value).total_seconds() <= 0:
            raise ValueError(f"{value} is not positive (rule: convergenceTimeout > 0s)")
        return value

    @model_validator(mode="after")
    def _unique_metrics(self) -> Gates:
        seen: set[str] = set()
        for index, metric in enumerate(self.metrics):
            if metric.name in seen:
                raise rule_error(
                    f"metric {metric.name!r} is listed twice (rule: metric names are unique)",
                    f"metrics[{index}].name",
                )
            seen.add(metric.name)
        return self


class RingStrategy(KubeModel):
    """``strategy.rings[]``: how one ring of the Fleet is rolled."""

    name: DnsLabel
    max_concurrency: int | str | None = None
    """A count (>= 1) or ``"N%"`` (1-100) of the ring's clusters, rounded down, at least 1."""
    growing: Growing | None = None
    soak: Duration = "10m"
    """Wait after each wave before its gates are read and the next wave starts."""
    require_approval: bool = False
    failure_budget: int | str = 0
    """How many of the ring's clusters may fail: a count, or ``"N%"`` rounded down."""
    on_failure: Literal["rollback", "halt"] = "rollback"
    gates: Gates = Field(default_factory=Gates)

    @field_validator("max_concurrency", mode="before")
    @classmethod
    def _concurrency(cls, value: object) -> object:
        return value if value is None else count_or_percent(value, "maxConcurrency", 1)

    @field_validator("failure_budget", mode="before")
    @classmethod
    def _budget(cls, value: object) -> object:
        return count_or_percent(value, "failureBudget", 0)

    @model_validator(mode="after")
    def _one_sizing(self) -> RingStrategy:
        if self.max_concurrency is not None and self.growing is not None:
            raise rule_error(
                "maxConcurrency and growing cannot both be set (rule: one way to size waves)",
                "growing",
            )
        return self


class Strategy(KubeModel):
    """``spec.strategy``: the rings in order, and the release-wide policies."""

    rings: Annotated[list[RingStrategy], Field(min_length=1)]
    on_unreachable: Literal["fail", "skip"] = "fail"
    on_cluster_added: Literal["ignore", "include"] = "ignore"

    @model_validator(mode="after")
    def _unique_rings(self) -> Strategy:
        seen: set[str] = set()
        for index, ring in enumerate(self.rings):
            if ring.name in seen:
                raise rule_error(
                    f"ring {ring.name!r} is listed twice (rule: each ring at most once)",
                    f"rings[{index}].name",
                )
            seen.add(ring.name)
        return self


class ReleaseSpec(KubeModel):
    """``spec`` of a Release."""

    fleet: str
    target: Target
    clusters: ClusterSelector | None = None
    strategy: Strategy

    @field_validator("fleet")
    @classmethod
    def _fleet_name(cls, name: str) -> str:
        problem = dns_subdomain_problem(name)
        if problem:
            raise ValueError(f"{problem} (rule: a Fleet's name)")
        return name


class Release(KubeModel):
    """A ``driftwave.io/v1alpha1`` Release."""

    api_version: Literal["driftwave.io/v1alpha1"] = "driftwave.io/v1alpha1"
    kind: Literal["Release"] = "Release"
    metadata: ObjectMeta
    spec: ReleaseSpec

    @property
    def name(self) -> str:
        """The release's name."""
        return self.metadata.name or ""
