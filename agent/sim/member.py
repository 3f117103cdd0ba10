"""The default simulated fleet member: the cluster ``driftwave agent serve`` runs.

:func:`member_world` loads the packaged scenario ``examples/scenarios/fleet-member.yaml`` (one
EC2NodeClass ``default`` pinned with ``amiSelectorTerms: [{alias: al2023@<release>}]``, the
NodePools ``general`` and ``batch`` with Drifted budgets of 10% and 20%, three Deployments with
PodDisruptionBudgets), scales the Deployments so that about ``nodes`` nodes are needed (ten
750m pods fill one 8-vCPU node; 70% of the nodes are ``general``, 30% ``batch``), and runs the
agent until they are provisioned and the pods run.

The AMI catalog holds the EKS-optimized releases (AL2023 v20251007 ... v20251216) for
Kubernetes 1.28 to 1.34, the same in every member (as AWS publishes the same images to every
account of a region). ``faulty_releases`` marks every image of those AL2023 releases faulty in
this member's catalog: their nodes boot but never become Ready.

The provisioner schedules with the default, cost-planned strategy (``driftwave``): each
NodePool's plan counts only the pods pinned to it (:func:`agent.scheduling.strategy.demand_of`),
so it provisions exactly the nodes the pods need (``nodes``, ten pods each), as quickly as
Karpenter's own order.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

from agent.api.conditions import is_true
from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.kube import Deployment, Pod
from agent.api.nodeclaim import NodeClaim
from agent.clock import EPOCH
from agent.cloud.simulated.amis import AMICatalog
from agent.sim.scenario_run import load_scenario
from agent.sim.world import World
from common.kubemodel import KubeModel
from common.names import dns_subdomain_problem
from common.selectors import AMISelectorTerm

SCENARIO = Path(__file__).resolve().parent.parent / "examples" / "scenarios" / "fleet-member.yaml"
KUBERNETES_VERSIONS = ("1.28", "1.29", "1.30", "1.31", "1.32", "1.33", "1.34")
PODS_PER_NODE = 10
GENERAL_SHARE = 0.7
WEB_SHARE = 0.6
MAX_NODES = 5_000
PROVISION_LIMIT = timedelta(minutes=30)
"""Virtual time allowed for the first nodes to come up."""
_RELEASE = re.compile(r"v[0-9]{8}")


class MemberError(ValueError):
    """A fleet member cannot be built as asked; the message names the setting and the rule."""


def member_world(
    name: str,
    *,
    nodes: int = 200,
    seed: int = 1,
    kubernetes_version: str = "1.30",
    ami_release: str = "v20251202",
    faulty_releases: Sequence[str] = (),
) -> World:
    """A provisioned fleet member (see the module docstring); raises MemberError."""
    problems = member_problems(
        name,
        nodes=nodes,
        kubernetes_version=kubernetes_version,
        ami_release=ami_release,
        faulty_releases=faulty_releases,
    )
    if problems:
        raise MemberError("; ".join(f"{setting}: {why}" for setting, why in problems))
    amis = AMICatalog.eks_optimized(kubernetes_versions=KUBERNETES_VERSIONS)
    for ami in list(amis):
        if ami.family == "AL2023" and ami.version in faulty_releases:
            amis.set_faulty(ami.id)
    scenario, objects = load_scenario(SCENARIO)
    world = World(
        zones=list(scenario.spec.cluster.zones),
        kubernetes_version=kubernetes_version,
        amis=amis,
        seed=seed,
        start=scenario.spec.start_time() or EPOCH,
    )
    for obj in objects:
        world.cluster.create(_adjusted(obj, nodes, ami_release))
    world.record("MemberStarted", f"cluster/{name}", "fleet member", {"nodes": nodes})
    _provision(world)
    return world


def member_problems(
    name: str,
    *,
    nodes: int = 200,
    kubernetes_version: str = "1.30",
    ami_release: str = "v20251202",
    faulty_releases: Sequence[str] = (),
) -> list[tuple[str, str]]:
    """Every reason a member cannot be built as asked: (the setting, what is wrong and the rule),
    e.g. ``("amiRelease", "'v2025' is not an AL2023 release of the catalog (rule: ...)")``."""
    problems: list[tuple[str, str]] = []
    name_problem = dns_subdomain_problem(name)
    if name_problem:
        problems.append(("name", name_problem))
    if not 0 <= nodes <= MAX_NODES:
        problems.append(("nodes", f"{nodes} is out of range (rule: 0 to {MAX_NODES})"))
    if kubernetes_version not in KUBERNETES_VERSIONS:
        problems.append(
            (
                "kubernetesVersion",
                f"{kubernetes_version!r} is not simulated "
                f"(rule: one of {', '.join(KUBERNETES_VERSIONS)})",
            )
        )
        return problems  # the releases are those of a Kubernetes version
    amis = AMICatalog.eks_optimized(kubernetes_versions=(kubernetes_version,))
    releases = amis.releases("AL2023", kubernetes_version)
    for setting, release in [("amiRelease", ami_release)] + [
        (f"faultyReleases[{i}]", r) for i, r in enumerate(faulty_releases)
    ]:
        if not _RELEASE.fullmatch(release) or release not in releases:
            problems.append(
                (
                    setting,
                    f"{release!r} is not an AL2023 release of the catalog "
                    f"(rule: one of {', '.join(releases)})",
                )
            )
    if ami_release in faulty_releases:
        problems.append(
            (
                "amiRelease",
                f"{ami_release} is also faulty, so no node could ever start "
                "(rule: the starting release must be healthy)",
            )
        )
    return problems


def replicas(nodes: int) -> dict[str, int]:
    """Replicas per Deployment for about ``nodes`` nodes."""
    general = round(nodes * GENERAL_SHARE)
    web = round(general * PODS_PER_NODE * WEB_SHARE)
    return {
        "web": web,
        "api": general * PODS_PER_NODE - web,
        "batch": (nodes - general) * PODS_PER_NODE,
    }


def _adjusted(obj: KubeModel, nodes: int, release: str) -> KubeModel:
    if isinstance(obj, Deployment):
        count = replicas(nodes).get(obj.metadata.name or "", obj.spec.replicas or 0)
        return obj.model_copy(update={"spec": obj.spec.model_copy(update={"replicas": count})})
    if isinstance(obj, EC2NodeClass):
        terms = [AMISelectorTerm(alias=f"al2023@{release}")]
        spec = obj.spec.model_copy(update={"ami_selector_terms": terms})
        return obj.model_copy(update={"spec": spec})
    return obj


def _provision(world: World) -> None:
    """Run the controllers until every pod runs on an initialized node (or the time limit)."""
    world.settle()
    limit = world.clock.now() + PROVISION_LIMIT
    while world.clock.now() < limit and not _provisioned(world):
        upcoming = world.clock.next_timer()
        if upcoming is None:
            break
        world.clock.run_until(min(upcoming, limit))
        world.settle()


def _provisioned(world: World) -> bool:
    if any(not pod.spec.node_name for pod in world.cluster.list(Pod)):
        return False
    return all(is_true(claim, "Initialized") for claim in world.cluster.list(NodeClaim))
