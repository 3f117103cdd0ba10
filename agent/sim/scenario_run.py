"""Running a Scenario: load it, build the world, play its events, stop at ``until``."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from agent.api.kinds import agent_kinds
from agent.api.scenario import Event, NetworkChange, Scenario, seconds
from agent.clock import EPOCH
from agent.cloud.simulated.network import SimulatedSecurityGroup, SimulatedSubnet
from agent.disruption.pacing import Pacing
from agent.kube.port import AlreadyExists, NotFound
from agent.scheduling.strategy import Strategy
from agent.sim.scenario_check import ami as scenario_ami
from agent.sim.scenario_check import catalog, network, scenario_objects
from agent.sim.world import World
from common.documents import Document, Finding, check_document, read_documents
from common.kubemodel import KubeModel, parse_manifest


class ScenarioError(ValueError):
    """A scenario (or a manifest it loads) is invalid; ``findings`` say where and why."""

    def __init__(self, findings: list[Finding]) -> None:
        self.findings = findings
        super().__init__("; ".join(str(f) for f in findings))


def load_scenario(path: Path) -> tuple[Scenario, list[KubeModel]]:
    """The scenario and the objects it starts with; raises ScenarioError with every finding
    (:func:`agent.sim.scenario_check.scenario_objects`: what ``driftwave validate`` checks)."""
    documents = read_documents(path)
    scenarios = [d for d in documents if d.kind == "Scenario"]
    if len(scenarios) != 1:
        raise ScenarioError(
            [Finding(str(path), 0, "Scenario", "", "", "the file must hold exactly one Scenario")]
        )
    obj, findings = check_document(scenarios[0], agent_kinds())
    if not isinstance(obj, Scenario):
        raise ScenarioError(findings)
    objects, errors = scenario_objects(path, scenarios[0], obj)
    if errors:
        raise ScenarioError(errors)
    return obj, objects


def build_world(
    scenario: Scenario,
    objects: list[KubeModel],
    seed: int = 1,
    strategy: Strategy = "driftwave",
    act: bool = True,
    pacing: Pacing = "driftwave",
    charge_wall_time: bool = False,
) -> World:
    """The world a scenario starts in, with its objects created; the provisioner schedules
    with ``strategy``; ``act=False`` makes a dry run; ``pacing`` and ``charge_wall_time`` are
    the disruption controller's (see :class:`World`)."""
    cluster = scenario.spec.cluster
    amis = catalog(scenario)
    start = scenario.spec.start_time()
    world = World(
        start=start or EPOCH,
        zones=list(cluster.zones),
        kubernetes_version=cluster.kubernetes_version,
        amis=amis,
        seed=seed,
        strategy=strategy,
        act=act,
        network=network(scenario),
        pacing=pacing,
        charge_wall_time=charge_wall_time,
    )
    for obj in objects:
        world.cluster.create(obj)
    world.record(
        "ScenarioStarted", f"scenario/{scenario.metadata.name}", "loaded", {"objects": len(objects)}
    )
    return world


def _apply(world: World, event: Event) -> None:
    action = event.action
    if action == "apply" and event.apply is not None:
        model, problems = check_document(Document("event", 0, event.apply), agent_kinds())
        if model is None:
            raise ScenarioError(problems)
        try:
            world.cluster.create(model)
        except AlreadyExists:
            world.cluster.update(model)
        name = f"{event.apply.get('kind')}/{_name(event.apply)}"
        world.record("Applied", name, "scenario event", {})
    elif action == "delete" and event.delete is not None:
        kind = _kind(event.delete.kind)
        try:
            world.cluster.delete(kind, event.delete.name, event.delete.namespace or "")
        except NotFound as exc:
            world.record("EventFailed", f"{event.delete.kind}/{event.delete.name}", str(exc), {})
            return
        world.record("Deleted", f"{event.delete.kind}/{event.delete.name}", "scenario event", {})
    elif action == "scale" and event.scale is not None:
        ref = event.scale
        kind = _kind(ref.kind)
        obj: Any = world.cluster.get(kind, ref.name, ref.namespace or "default")
        world.cluster.update(
            obj.model_copy(update={"spec": obj.spec.model_copy(update={"replicas": ref.replicas})})
        )
        world.record("Scaled", f"{ref.kind}/{ref.name}", f"replicas → {ref.replicas}", {})
    elif action == "kubernetes_version" and event.kubernetes_version is not None:
        world.kubernetes_version = event.kubernetes_version
        world.kubelet.kubernetes_version = event.kubernetes_version
        world.record(
            "KubernetesUpgraded", "cluster", f"control plane → {event.kubernetes_version}", {}
        )
    elif action == "publish_ami" and event.publish_ami is not None:
        ami = world.amis.add(scenario_ami(event.publish_ami, world.kubernetes_version))
        world.record("AMIPublished", f"ami/{ami.id}", ami.name, {"faulty": ami.faulty})
    elif action == "fault" and event.fault is not None:
        fault = event.fault
        if fault.insufficient_capacity is not None:
            ice = fault.insufficient_capacity
            until = None
            if ice.duration:
                until = world.clock.now() + timedelta(seconds=seconds(ice.duration))
            world.cloud.faults.insufficient_capacity(
                instance_type=ice.instance_type,
                zone=ice.zone,
                capacity_type=ice.capacity_type,
                until=until,
            )
            world.record("FaultInjected", "cloud", "insufficient capacity", ice.to_manifest())
        elif fault.faulty_ami is not None:
            world.amis.set_faulty(fault.faulty_ami)
            world.record("FaultInjected", f"ami/{fault.faulty_ami}", "faulty image", {})
    elif action == "network" and event.network is not None:
        _change_network(world, event.network)


def _change_network(world: World, change: NetworkChange) -> None:
    vpc = world.network
    for subnet in change.add_subnets:
        vpc.add_subnet(SimulatedSubnet(subnet.id, subnet.zone, dict(subnet.tags)))
    for group in change.add_security_groups:
        vpc.add_security_group(SimulatedSecurityGroup(group.id, group.name, dict(group.tags)))
    for resource_id in change.remove:
        vpc.remove(resource_id)
    for retag in change.tag:
        vpc.retag(retag.id, retag.tags)
    world.record("NetworkChanged", "network", "scenario event", change.to_manifest())


def _player(world: World, event: Event) -> Callable[[], None]:
    def play() -> None:
        _apply(world, event)
        world.settle()

    return play


def _name(data: dict[str, Any]) -> str:
    meta = data.get("metadata")
    return str(meta.get("name", "")) if isinstance(meta, dict) else ""


def _kind(name: str) -> type[KubeModel]:
    for (_, kind), model in agent_kinds().items():
        if kind == name:
            return model
    raise ScenarioError([Finding("event", 0, name, "", "kind", f"unknown kind {name}")])


def last_event_seconds(scenario: Scenario) -> float:
    """When the scenario's last event happens (0 without events)."""
    return max((seconds(event.at) for event in scenario.spec.events), default=0.0)


Progress = Callable[[float, float], None]
"""Told (simulated seconds done, seconds in all) as a run goes."""


def run(
    world: World,
    scenario: Scenario,
    until: float | None = None,
    progress: Progress | None = None,
) -> World:
    """Play the scenario's events and run the controllers until ``until`` seconds; ``progress``
    hears how far the virtual clock is (at most ten times a second of real time)."""
    total = until if until is not None else seconds(scenario.spec.until)
    end = world.start + timedelta(seconds=total)
    for event in scenario.spec.events:
        when = world.start + timedelta(seconds=seconds(event.at))
        world.clock.call_at(when, _player(world, event))
    after_each = None
    if progress is not None:
        told = [0.0]

        def after_each() -> None:
            now = time.monotonic()
            if now - told[0] >= 0.1:
                told[0] = now
                progress((world.clock.now() - world.start).total_seconds(), total)

    world.run_until(end, after_each)
    if progress is not None:
        progress(total, total)
    return world


__all__ = ["ScenarioError", "build_world", "load_scenario", "parse_manifest", "run"]
