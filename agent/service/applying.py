"""What applying or rolling back a wave checks and records first: that no wave still under way
shares its EC2NodeClasses (:func:`check_overlap`), that no later wave on them stands
(:func:`check_later`), and the wave as applied, with each class's images before
(:func:`new_wave`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodeclaim import NodeClaim
from agent.service.errors import WaveConflict
from agent.service.runtime import AgentRuntime
from agent.service.status import images_of
from agent.service.targets import Resolution
from agent.service.waves import ClassBefore, Selection, Wave, pools_using, wave_claims
from common.wire.phases import MOVING


def check_overlap(waves: Mapping[str, Wave], wave_id: str, names: list[str]) -> None:
    """:class:`WaveConflict` when a wave of ``waves`` still under way changes one of the
    EC2NodeClasses ``names`` that wave ``wave_id`` would change."""
    for other in waves.values():
        shared = sorted(set(other.node_classes) & set(names))
        if other.phase in MOVING and shared:
            raise WaveConflict(
                f"cannot apply wave {wave_id}: wave {other.id} is still {other.phase} on "
                f"EC2NodeClass {', '.join(shared)}; wait until it converges, fails or is "
                "rolled back",
                other.id,
            )


def check_later(waves: Mapping[str, Wave], wave: Wave) -> None:
    """:class:`WaveConflict` when a wave applied after ``wave`` (``waves`` in the order they
    were applied) on one of its EC2NodeClasses is not rolled back."""
    ids = list(waves)
    for other in (waves[i] for i in ids[ids.index(wave.id) + 1 :]):
        shared = sorted(set(other.node_classes) & set(wave.node_classes))
        if shared and other.phase != "rolled-back":
            raise WaveConflict(
                f"cannot roll back wave {wave.id}: wave {other.id} was applied after it on "
                f"EC2NodeClass {', '.join(shared)} and is {other.phase}; roll that back first",
                other.id,
            )


def new_wave(
    world: AgentRuntime,
    wave_id: str,
    request: dict[str, Any],
    names: list[str],
    resolution: Resolution,
) -> Wave:
    """Wave ``wave_id`` of ``request`` over the EC2NodeClasses ``names`` as ``world`` stands
    now: each class's selector terms, images and its nodes' images before the change."""
    before: dict[str, ClassBefore] = {}
    for name in names:
        nodeclass = world.cluster.get(EC2NodeClass, name)
        claims = wave_claims(world, pools_using(world, [name]))
        before[name] = ClassBefore(
            terms=[t.to_manifest() for t in nodeclass.spec.ami_selector_terms],
            ami_family=nodeclass.spec.ami_family,
            images=images_of(nodeclass),
            node_images=_images(claims),
        )
    return Wave(
        id=wave_id,
        request=request,
        node_classes=names,
        pools=pools_using(world, names),
        before=before,
        kubernetes_version_before=world.kubernetes_version,
        target_images=resolution.image_ids(),
        applied_at=world.clock.now(),
        applied=(
            {n: Selection.of(c) for n, c in resolution.classes.items()}
            if request["target"].get("amiSelectorTerms") is not None
            else {}
        ),
    )


def _images(claims: list[NodeClaim]) -> list[str]:
    return sorted({c.status.image_id for c in claims if c.status.image_id})
