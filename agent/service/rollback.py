"""Rolling a wave back: what to put back on each EC2NodeClass, and a wave rebuilt from the
caller's record when this agent has none (see :meth:`agent.service.AgentService.rollback_wave`).
"""

from __future__ import annotations

from typing import Any

from agent.api.conditions import is_true
from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodeclaim import NodeClaim
from agent.kube.port import ClusterError, NotFound
from agent.service.errors import AgentError, InvalidRequest
from agent.service.requests import canonical
from agent.service.runtime import AgentRuntime
from agent.service.targets import family_for, with_terms
from agent.service.waves import (
    ClassBefore,
    Selection,
    Wave,
    pools_using,
    resolved_images,
    unresolved,
    wave_claims,
)
from common.kubemodel import ManifestInvalid
from common.wire.phases import Phase
from common.wire.waves import RollbackRequest


def recorded_wave(world: AgentRuntime, wave_id: str, recorded: RollbackRequest, doing: str) -> Wave:
    """A wave this agent has no record of, rebuilt from the caller's record of it."""
    known = {c.name for c in world.cluster.list(EC2NodeClass)}
    missing = sorted(set(recorded.previous) - known)
    if missing:
        raise InvalidRequest(
            doing,
            [(f"previous.{n}", "no EC2NodeClass of that name here") for n in missing],
        )
    names = list(recorded.previous)
    now = world.clock.now()
    before = {
        name: ClassBefore(
            terms=[t.to_manifest() for t in sel.ami_selector_terms],
            ami_family=sel.ami_family,
            images=[],
            node_images=list(recorded.images_before),
        )
        for name, sel in recorded.previous.items()
    }
    request: dict[str, Any] = {"target": {}}
    if recorded.target is not None:
        request = {"target": canonical(recorded.target)}
    for key in ("rollout", "release"):
        if getattr(recorded, key):
            request[key] = getattr(recorded, key)
    wave = Wave(
        id=wave_id,
        request=request,
        node_classes=names,
        pools=pools_using(world, names),
        before=before,
        kubernetes_version_before=(recorded.kubernetes_version_before or world.kubernetes_version),
        target_images=[],
        applied_at=now,
        reason="this agent had no record of the wave: rolling back from the caller's record",
    )
    world.record("WaveRecovered", f"wave/{wave_id}", wave.reason, {"classes": names})
    return wave


def restore_plan(
    world: AgentRuntime, wave: Wave
) -> tuple[str, list[tuple[EC2NodeClass, list[str]]]]:
    """How to put each class back as it stood before the wave (AgentService.rollback_wave): the
    reason, and each class to patch with the images it should come back to. Sets
    ``wave.restored``."""
    pinned: list[str] = []
    unchanged: list[str] = []
    restored: list[tuple[EC2NodeClass, list[str]]] = []
    moved = world.kubernetes_version != wave.kubernetes_version_before
    for name, before in wave.before.items():
        current = world.cluster.get(EC2NodeClass, name)
        terms, family = before.terms, before.ami_family
        if moved and any("alias" in t for t in terms):
            terms = [{"id": i} for i in (before.node_images or before.images)]
            family = family_for(current, terms)
            pinned.append(f"{name} to {', '.join(t['id'] for t in terms)}")
        wave.restored[name] = Selection(terms, family)
        if Selection.of(current) == wave.restored[name]:
            unchanged.append(name)
            continue
        try:
            changed = with_terms(current, terms, family)
        except ManifestInvalid as exc:  # the previous spec was valid: only a bug gets here
            raise AgentError(f"rolling back wave {wave.id}: EC2NodeClass {name}: {exc}") from exc
        restored.append((changed, before.node_images or before.images))
    if pinned:
        reason = (
            f"the control plane stays at {world.kubernetes_version}: EKS cannot move it "
            f"back to {wave.kubernetes_version_before}, so EC2NodeClass {'; '.join(pinned)} "
            "(the images its nodes ran before) was pinned instead"
        )
    elif not restored:
        reason = (
            f"EC2NodeClass {', '.join(unchanged)} already carried the previous "
            "amiSelectorTerms: nothing to put back"
        )
    else:
        reason = "restored the previous amiSelectorTerms"
    return reason, restored


def abandon_unready(world: AgentRuntime, wave: Wave) -> list[str]:
    """While ``wave`` rolls back, delete the NodeClaims of its NodePools that launched on an image
    its classes no longer select and never initialized (a faulty release's nodes that never
    became Ready); the names deleted.

    Karpenter's disruption queue waits up to 10 minutes for a drift replacement to initialize
    before it gives up and gives the node it was replacing back; it gives up at once when the
    replacement is deleted ("replacement was deleted", sigs.k8s.io/karpenter
    pkg/controllers/disruption/queue.go). And it never removes a NodeClaim whose Node registered
    but never became Ready (only an unregistered one, after 15 minutes). So without this a
    rollback of such a release waits those 10 minutes and leaves the never-Ready nodes behind.
    Nothing is deleted until the classes' status has caught up with the restored selection."""
    if wave.phase is not Phase.ROLLING_BACK:
        return []
    images, empty = resolved_images(world, wave.node_classes)
    if empty or not images or unresolved(world, wave.node_classes):
        return []
    deleted: list[str] = []
    for claim in wave_claims(world, wave.pools):
        image = claim.status.image_id or ""
        if claim.metadata.deletion_timestamp or is_true(claim, "Initialized"):
            continue
        if not image or image in images:
            continue
        try:
            world.cluster.delete(NodeClaim, claim.name)
        except NotFound:
            continue
        except ClusterError as exc:
            # e.g. refused (403) to an agent installed by a chart older than this rule; the
            # rollback goes on, Karpenter's own timeouts end these nodes later
            world.record(
                "NodeClaimNotAbandoned",
                f"nodeclaim/{claim.name}",
                f"could not delete it (never initialized on {image}): {exc}",
                {"image": image, "wave": wave.id},
            )
            continue
        world.record(
            "NodeClaimAbandoned",
            f"nodeclaim/{claim.name}",
            f"never initialized on {image}, which the rollback of wave {wave.id} leaves",
            {"image": image, "wave": wave.id},
        )
        deleted.append(claim.name)
    return deleted
