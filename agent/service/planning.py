"""``plan``: the drift preview, and what applying a target would do, decided without acting.

Without a target the result is the drift preview of the cluster as it stands
(:func:`agent.disruption.preview.drift_preview`). With one, it adds for each selected
EC2NodeClass its current terms and images and the images the target terms would resolve to
(the simulated cloud's own resolution), how many nodes of each NodePool would drift (a node
drifts when the image its instance type maps to changes, as AMI drift decides), and the waves
and ETA the NodePools' ``Drifted`` budgets allow for those nodes (the preview's wave planner).
Nothing is created, patched or deleted.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.labels import NODEPOOL_LABEL
from agent.api.nodeclaim import NodeClaim
from agent.api.nodeclass_status import ResolvedAMI
from agent.cloud.amirules import first_fitting_image
from agent.service.requests import canonical, parse_request
from agent.service.runtime import AgentRuntime
from agent.service.status import images_of, rfc3339
from agent.service.targets import Resolution, covers_every_class, resolve_target, select_classes
from common.wire.plan import PlanDocument, PlannedClass, PlanRequest
from common.wire.target import WaveTarget


def plan(world: AgentRuntime, request: Any) -> PlanDocument:
    """The plan for ``request`` (see the module docstring); raises InvalidRequest."""
    from agent.disruption.candidates import pool_nodes
    from agent.disruption.preview import budget_waves, drift_preview

    doing = "planning"
    parsed = parse_request(PlanRequest, request, doing)
    step = world.replace_seconds()
    now = world.clock.now()
    time, version = rfc3339(now), world.kubernetes_version
    preview = drift_preview(world.disruption, replace_seconds=step)
    if parsed.target is None:
        return PlanDocument(time=time, kubernetes_version=version, preview=preview, target=None)
    names = select_classes(world, parsed.node_classes, doing)
    if parsed.target.kubernetes_version is not None:
        covers_every_class(world, names, doing)
    resolution = resolve_target(world, parsed.target, names, doing)
    rows = _drifting(world, resolution)
    snapshot = world.disruption.snapshot()
    counts = pool_nodes(snapshot, world.disruption.queue.busy())
    waves = budget_waves(rows, snapshot.pools, counts, now, timedelta(seconds=step))
    unbounded = any(w["endSeconds"] is None for w in waves)
    eta = max((w["endSeconds"] for w in waves if w["endSeconds"] is not None), default=0.0)
    return PlanDocument(
        time=time,
        kubernetes_version=version,
        preview=preview,
        target=WaveTarget.model_validate(canonical(parsed)["target"]),
        kubernetes_version_target=resolution.kubernetes_version,
        node_classes=[_class_row(world, name, resolution) for name in names],
        target_images=resolution.image_ids(),
        error=resolution.failure(),
        would_drift=dict(sorted(Counter(r["nodePool"] for r in rows).items())),
        drifting=rows,
        waves=waves,
        eta_seconds=None if unbounded else eta,
        eta=None if unbounded else rfc3339(now + timedelta(seconds=eta)),
        replace_seconds_assumed=step,
    )


def _class_row(world: AgentRuntime, name: str, resolution: Resolution) -> PlannedClass:
    current = world.cluster.get(EC2NodeClass, name)
    changed = resolution.classes.get(name, current)
    return PlannedClass(
        name=name,
        ami_selector_terms=[t.to_manifest() for t in current.spec.ami_selector_terms],
        images=images_of(current),
        target_ami_selector_terms=[t.to_manifest() for t in changed.spec.ami_selector_terms],
        target_images=list(dict.fromkeys(a.id for a in resolution.images.get(name, []))),
        error=resolution.errors.get(name),
    )


def _drifting(world: AgentRuntime, resolution: Resolution) -> list[dict[str, Any]]:
    """The launched nodes of the selected classes whose image the target would change."""
    by_pool = {
        pool.name: pool.spec.template.spec.node_class_ref.name
        for pool in world.disruption.snapshot().pools.values()
    }
    rows: list[dict[str, Any]] = []
    for claim in world.cluster.list(NodeClaim):
        pool = claim.metadata.labels.get(NODEPOOL_LABEL, "")
        amis: list[ResolvedAMI] | None = resolution.images.get(by_pool.get(pool, ""))
        if amis is None or not claim.status.image_id or claim.metadata.deletion_timestamp:
            continue
        image = first_fitting_image(dict(claim.metadata.labels), amis)
        if image is not None and image.id == claim.status.image_id:
            continue
        rows.append(
            {
                "node": claim.status.node_name or claim.name,
                "nodeClaim": claim.name,
                "nodePool": pool,
                "image": claim.status.image_id,
                "targetImage": image.id if image is not None else "",
            }
        )
    return sorted(rows, key=lambda r: (r["nodePool"], r["node"]))
