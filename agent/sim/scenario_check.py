"""Everything about a Scenario that ``driftwave validate`` checks and ``agent simulate`` relies
on: the objects it starts with (inline ``spec.manifests`` and the ``spec.manifestFiles`` it
reads), the objects its events create, scale and delete, and its AMI catalog.

:func:`scenario_objects` is shared by both commands, so a scenario ``validate`` passes never
fails once its simulation has started.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC
from pathlib import Path

from agent.api.kinds import agent_kinds
from agent.api.scenario import AMISpec, NetworkChange, NetworkSpec, Scenario, seconds
from agent.cloud.simulated.amis import AMI, AMICatalog
from agent.cloud.simulated.network import (
    SimulatedNetwork,
    SimulatedSecurityGroup,
    SimulatedSubnet,
)
from common.documents import Document, Finding, Linter, ManifestSyntaxError, check_document
from common.documents import read_documents as read_manifest_file
from common.kubemodel import KubeModel

SCALABLE = ("Deployment", "ReplicaSet", "StatefulSet")
"""The kinds a ``scale`` event may name (they have ``spec.replicas``)."""
Key = tuple[str, str, str]


def ami(spec: AMISpec, default_version: str) -> AMI:
    """The simulated cloud's image for ``spec`` (its date was checked by the model)."""
    created = spec.created_time()
    return AMI(
        id=spec.id,
        name=spec.name,
        family=spec.family,
        version=spec.version or "v1",
        kubernetes_version=spec.kubernetes_version or default_version,
        arch=spec.arch,
        variant=spec.variant,
        created=created if created.tzinfo else created.replace(tzinfo=UTC),
        tags=dict(spec.tags),
        owner=spec.owner,
        deprecated=spec.deprecated,
        faulty=spec.faulty,
    )


def catalog(scenario: Scenario) -> AMICatalog:
    """The AMI catalog a scenario starts with: the EKS-optimized images and ``spec.amis``
    (raises ValueError on an id given twice)."""
    cluster = scenario.spec.cluster
    versions = sorted({cluster.kubernetes_version, "1.28", "1.29", "1.30", "1.31"})
    amis = AMICatalog.eks_optimized(kubernetes_versions=versions)
    for spec in scenario.spec.amis or []:
        amis.add(ami(spec, cluster.kubernetes_version))
    return amis


def network(scenario: Scenario) -> SimulatedNetwork:
    """The simulated VPC a scenario starts with: ``spec.network`` (strict), or the open VPC."""
    spec: NetworkSpec | None = scenario.spec.network
    if spec is None:
        return SimulatedNetwork.open(scenario.spec.cluster.zones)
    return SimulatedNetwork(
        [SimulatedSubnet(s.id, s.zone, dict(s.tags)) for s in spec.subnets],
        [SimulatedSecurityGroup(g.id, g.name, dict(g.tags)) for g in spec.security_groups],
    )


def scenario_objects(
    path: Path, doc: Document, scenario: Scenario, linters: Iterable[Linter] = ()
) -> tuple[list[KubeModel], list[Finding]]:
    """The objects ``scenario`` (document ``doc`` of file ``path``) starts with, and every error
    about it: its manifests, the files it reads, its events and its AMIs.

    With ``linters`` (``driftwave validate``), the findings also hold their warnings about each
    valid object of ``spec.manifests`` (path ``spec.manifests[N]...``), ``spec.manifestFiles``
    (the file's own document) and ``apply`` events (``spec.events[N].apply...``)."""
    linters = tuple(linters)

    def finding(field: str, message: str) -> Finding:
        return Finding(doc.source, doc.index, "Scenario", doc.name, field, message, line=doc.line)

    docs = [
        Document(doc.source, doc.index, m, f"spec.manifests[{i}]", doc.line)
        for i, m in enumerate(scenario.spec.manifests)
    ]
    errors: list[Finding] = []
    for index, relative in enumerate(scenario.spec.manifest_files):
        try:
            docs.extend(read_manifest_file((path.parent / relative).resolve()))
        except ManifestSyntaxError as exc:
            errors.append(finding(f"spec.manifestFiles[{index}]", f"{relative}: {exc.reason}"))
        except OSError as exc:
            errors.append(
                finding(f"spec.manifestFiles[{index}]", f"cannot read {relative}: {exc.strerror}")
            )
    objects: list[KubeModel] = []
    for manifest in docs:
        model, problems = check_document(manifest, agent_kinds(), linters)
        errors.extend(_kept(model, problems))
        if isinstance(model, Scenario):
            errors.append(finding(manifest.prefix, "a Scenario cannot start with a Scenario"))
        elif model is not None:
            objects.append(model)
    events = _event_problems(doc, scenario, objects, linters)
    errors.extend(p if isinstance(p, Finding) else finding(*p) for p in events)
    return objects, errors


def _kept(model: KubeModel | None, problems: Iterable[Finding]) -> list[Finding]:
    """The errors, and the linters' warnings (about a valid object: the only findings it has)."""
    return [p for p in problems if p.severity == "error" or model is not None]


def _event_problems(
    doc: Document, scenario: Scenario, objects: Iterable[KubeModel], linters: tuple[Linter, ...]
) -> Iterable[tuple[str, str] | Finding]:
    present = {_key(obj) for obj in objects}
    kinds = {kind for _, kind in agent_kinds()}
    try:
        amis = catalog(scenario)
    except ValueError as exc:
        yield "spec.amis", f"{exc} (rule: AMI ids are unique)"
        return
    known_amis = {image.id for image in amis}
    network = scenario.spec.network
    subnets = {s.id for s in network.subnets} if network is not None else set()
    groups = {g.id for g in network.security_groups} if network is not None else set()
    for index, event in sorted(enumerate(scenario.spec.events), key=lambda e: seconds(e[1].at)):
        where = f"spec.events[{index}]"
        if event.apply is not None:
            applied, problems = check_document(
                Document(doc.source, doc.index, event.apply, f"{where}.apply", doc.line),
                agent_kinds(),
                linters,
            )
            yield from (
                (p.path, p.message) if p.severity == "error" else p
                for p in _kept(applied, problems)
            )
            if applied is not None:
                present.add(_key(applied))
        if event.scale is not None:
            ref = event.scale
            if ref.kind not in SCALABLE:
                yield f"{where}.scale.kind", f"{ref.kind} cannot be scaled (one of {SCALABLE})"
            elif (ref.kind, ref.namespace or "default", ref.name) not in present:
                yield (
                    f"{where}.scale.name",
                    f"no {ref.kind} {ref.namespace or 'default'}/{ref.name} exists at "
                    f"{event.at} (rule: scale an object of spec.manifests, spec.manifestFiles "
                    "or an earlier apply event)",
                )
        if event.delete is not None and event.delete.kind not in kinds:
            yield f"{where}.delete.kind", f"unknown kind {event.delete.kind}"
        if event.publish_ami is not None:
            if event.publish_ami.id in known_amis:
                yield f"{where}.publishAmi.id", "the catalog already has this AMI (rule: unique)"
            known_amis.add(event.publish_ami.id)
        if event.network is not None:
            yield from _network_problems(f"{where}.network", event.network, subnets, groups)
        faulty = event.fault.faulty_ami if event.fault is not None else None
        if faulty is not None and faulty not in known_amis:
            yield (
                f"{where}.fault.faultyAmi",
                "no such AMI at that time (rule: an AMI of the EKS-optimized catalog, "
                "spec.amis or an earlier publishAmi event)",
            )


def _network_problems(
    where: str, change: NetworkChange, subnets: set[str], groups: set[str]
) -> Iterable[tuple[str, str]]:
    """What is wrong with a network event, given the ids existing before it (updated)."""
    for field, added, existing in (
        ("addSubnets", [s.id for s in change.add_subnets], subnets),
        ("addSecurityGroups", [g.id for g in change.add_security_groups], groups),
    ):
        for number, resource_id in enumerate(added):
            if resource_id in subnets or resource_id in groups:
                yield (
                    f"{where}.{field}[{number}].id",
                    f"{resource_id} already exists at that time (rule: ids are unique)",
                )
            existing.add(resource_id)
    gone = (
        "no subnet or security group {} exists at that time (rule: name one of spec.network "
        "or an earlier network event)"
    )
    for number, resource_id in enumerate(change.remove):
        if resource_id not in subnets and resource_id not in groups:
            yield f"{where}.remove[{number}]", gone.format(resource_id)
        subnets.discard(resource_id)
        groups.discard(resource_id)
    for number, retag in enumerate(change.tag):
        if retag.id not in subnets and retag.id not in groups:
            yield f"{where}.tag[{number}].id", gone.format(retag.id)


def _key(obj: KubeModel) -> Key:
    meta = getattr(obj, "metadata", None)
    namespace = getattr(meta, "namespace", None) or "default"
    return type(obj).__name__, namespace, getattr(meta, "name", None) or ""
