"""Waves on a stepped fleet member: convergence within budgets, idempotence, conflicts,
failure on a faulty release, rollback, Kubernetes-version targets."""

from __future__ import annotations

import math

import pytest

from agent.api.conditions import is_true
from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodeclaim import NodeClaim
from agent.api.nodepool import NodePool
from agent.kube.port import ClusterError
from agent.service import InvalidRequest, WaveConflict, WaveNotFound
from common.kubemodel import Condition
from common.wire.waves import WaveDocument

from .helpers import NEWEST, START, STEP, Rig, alias, rig, wire


def _allowed(pool: NodePool, nodes: int) -> int:
    (budget,) = pool.spec.disruption.budgets
    return math.ceil(int(budget.nodes.rstrip("%")) * nodes / 100)


def test_a_wave_converges_on_the_target_images_within_the_drifted_budgets() -> None:
    r = rig(nodes=20)
    before = r.images()
    created, wave = r.service.apply_wave("wave-1", alias(NEWEST))
    assert created
    assert wave.phase == "progressing"
    assert wire(wave)["previous"] == {
        "default": {"amiSelectorTerms": [{"alias": f"al2023@{START}"}], "amiFamily": None}
    }
    assert wave.images_before == sorted(before)
    assert wave.node_classes == ["default"]
    assert r.terms() == [{"alias": f"al2023@{NEWEST}"}]
    assert r.service.status().active_wave == "wave-1"
    wave = r.run_until_not("wave-1", "progressing")
    WaveDocument.model_validate(wire(wave), extra="forbid")
    assert wave.phase == "converged"
    assert wave.converged_at is not None
    assert [h.phase for h in wave.history] == ["progressing", "converged"]
    progress = wave.progress
    assert progress.on_target == progress.nodes == 20
    assert progress.drifted == progress.disrupting == 0
    assert progress.nodes_replaced == 20
    assert r.images() <= set(wave.target_images)
    assert not r.images() & before
    pools = {p.name: p for p in r.world.cluster.list(NodePool)}
    sizes = {"general": 14, "batch": 6}
    for name, most in r.world.metrics.max_concurrent.items():
        assert 0 < most <= _allowed(pools[name], sizes[name]), name
    assert set(r.world.metrics.max_concurrent) == {"general", "batch"}
    assert r.world.metrics.pdb_violations == []
    assert r.service.status().active_wave is None


def test_applying_the_same_wave_again_applies_nothing_twice() -> None:
    r = rig(nodes=10)
    _, first = r.service.apply_wave("wave-1", {**alias(NEWEST), "rollout": "r1"})
    version = r.world.cluster.get(EC2NodeClass, "default").metadata.resource_version
    r.sim.step(60)
    created, again = r.service.apply_wave("wave-1", {"rollout": "r1", **alias(NEWEST)})
    assert not created
    assert again.applied_at == first.applied_at
    assert again.rollout == "r1"
    assert r.world.cluster.get(EC2NodeClass, "default").metadata.resource_version == version
    patches = [e for e in r.world.timeline if e.type == "NodeClassPatched"]
    assert len(patches) == 1


def test_the_same_wave_id_with_another_request_is_a_conflict_and_changes_nothing() -> None:
    r = rig(nodes=10)
    r.service.apply_wave("wave-1", alias(NEWEST))
    with pytest.raises(WaveConflict) as caught:
        r.service.apply_wave("wave-1", alias("v20251118"))
    assert caught.value.other == "wave-1"
    assert "different request" in str(caught.value)
    assert r.terms() == [{"alias": f"al2023@{NEWEST}"}]


def test_a_new_wave_on_a_class_still_under_way_is_a_conflict_naming_the_wave() -> None:
    r = rig(nodes=10)
    r.service.apply_wave("wave-1", alias(NEWEST))
    with pytest.raises(WaveConflict) as caught:
        r.service.apply_wave("wave-2", alias("v20251118"))
    assert caught.value.other == "wave-1"
    assert "wave wave-1 is still progressing on EC2NodeClass default" in str(caught.value)
    assert r.run_until_not("wave-1", "progressing").phase == "converged"
    created, _ = r.service.apply_wave("wave-2", alias("v20251118"))
    assert created


def test_a_faulty_release_fails_the_wave_with_drift_halted_and_it_stays_failed() -> None:
    r = rig(nodes=20, faulty_releases=(NEWEST,))
    before = r.images()
    r.service.apply_wave("wave-1", alias(NEWEST))
    wave = r.run_until_not("wave-1", "progressing", limit=2 * 3600)
    assert wave.phase == "failed"
    assert wave.reason.startswith("drift halted on NodePool")
    halted = {h.node_pool for h in wave.progress.drift_halted}
    assert halted
    assert halted <= {"general", "batch"}
    assert all(h.reason == "ReplacementsFailing" for h in wave.progress.drift_halted)
    assert wave.progress.registration_failures >= 3
    assert wave.progress.launch_failures == 0
    assert wave.finished_at is not None
    status = r.service.status()
    assert status.registration_failures >= 3
    assert {h.node_pool for h in status.drift_halted} == halted
    assert r.images() == before  # no faulty node ever replaced a healthy one
    r.sim.step(1800)
    assert r.service.wave("wave-1").phase == "failed"


def test_rollback_restores_the_terms_and_converges_back_on_the_previous_images() -> None:
    r = rig(nodes=20)
    before = r.images()
    r.service.apply_wave("wave-1", alias(NEWEST))
    assert r.run_until_not("wave-1", "progressing").phase == "converged"
    wave = r.service.rollback_wave("wave-1")
    assert wave.phase == "rolling-back"
    assert wave.reason == "restored the previous amiSelectorTerms"
    assert r.terms() == [{"alias": f"al2023@{START}"}]
    wave = r.run_until_not("wave-1", "rolling-back")
    assert wave.phase == "rolled-back"
    assert r.images() == before
    assert [h.phase for h in wave.history] == [
        "progressing",
        "converged",
        "rolling-back",
        "rolled-back",
    ]
    patches = len([e for e in r.world.timeline if e.type == "NodeClassPatched"])
    assert r.service.rollback_wave("wave-1") == r.service.wave("wave-1")
    assert len([e for e in r.world.timeline if e.type == "NodeClassPatched"]) == patches


def test_rolling_back_a_failed_wave_clears_the_halt() -> None:
    r = rig(nodes=10, faulty_releases=(NEWEST,))
    r.service.apply_wave("wave-1", alias(NEWEST))
    assert r.run_until_not("wave-1", "progressing", limit=2 * 3600).phase == "failed"
    r.service.rollback_wave("wave-1")
    wave = r.run_until_not("wave-1", "rolling-back")
    assert wave.phase == "rolled-back"
    assert r.service.status().drift_halted == []


def test_a_kubernetes_version_wave_moves_the_control_plane_and_rollback_pins_the_images() -> None:
    r = rig(nodes=10)
    (old,) = r.images()
    created, wave = r.service.apply_wave("upgrade", {"target": {"kubernetesVersion": "1.31"}})
    assert created
    assert wave.kubernetes_version_before == "1.30"
    assert r.world.kubernetes_version == "1.31"
    assert r.service.status().kubernetes_version == "1.31"
    assert r.run_until_not("upgrade", "progressing").phase == "converged"
    assert {r.world.amis.get(i).kubernetes_version for i in r.images()} == {"1.31"}
    wave = r.service.rollback_wave("upgrade")
    assert "EKS cannot move it back to 1.30" in wave.reason
    assert old in wave.reason
    assert r.terms() == [{"id": old}]
    assert r.world.cluster.get(EC2NodeClass, "default").spec.ami_family == "AL2023"
    assert r.run_until_not("upgrade", "rolling-back").phase == "rolled-back"
    assert r.images() == {old}
    assert r.world.kubernetes_version == "1.31"


def test_pinning_an_alias_class_to_ids_sets_its_family_and_rollback_restores_both() -> None:
    r = rig(nodes=5)
    (old,) = r.images()
    newer = next(
        a.id
        for a in r.world.amis
        if a.family == "AL2023"
        and a.version == NEWEST
        and a.kubernetes_version == "1.30"
        and a.arch == "amd64"
        and a.variant == "standard"
    )
    r.service.apply_wave("pin", {"target": {"amiSelectorTerms": [{"id": newer}]}})
    stored = r.world.cluster.get(EC2NodeClass, "default")
    assert stored.spec.ami_family == "AL2023"
    assert r.run_until_not("pin", "progressing").phase == "converged"
    assert r.images() == {newer}
    r.service.rollback_wave("pin")
    assert r.run_until_not("pin", "rolling-back").phase == "rolled-back"
    stored = r.world.cluster.get(EC2NodeClass, "default")
    assert stored.spec.ami_family is None
    assert r.terms() == [{"alias": f"al2023@{START}"}]
    assert r.images() == {old}


def test_a_target_resolving_to_no_image_fails_at_once_and_changes_nothing() -> None:
    r = rig(nodes=5)
    spec = r.world.cluster.get(EC2NodeClass, "default").spec
    created, wave = r.service.apply_wave(
        "ghost", {"target": {"amiSelectorTerms": [{"id": "ami-00000000000dead"}]}}
    )
    assert created
    assert wave.phase == "failed"
    assert wave.reason.startswith("the target resolves to no image")
    assert wave.target_images == []
    stored = r.world.cluster.get(EC2NodeClass, "default")
    assert stored.spec == spec  # only the wave's record was added (agent.service.wavestore)
    assert "ghost" in stored.metadata.annotations["driftwave.io/waves"]
    assert r.service.rollback_wave("ghost").phase == "rolled-back"


def test_a_control_plane_version_without_images_fails_without_moving() -> None:
    r = rig(nodes=3, kubernetes_version="1.34")
    _, wave = r.service.apply_wave("up", {"target": {"kubernetesVersion": "1.35"}})
    assert wave.phase == "failed"
    assert "1.35" in wave.reason
    assert r.world.kubernetes_version == "1.34"


def test_rolling_back_a_wave_with_a_later_wave_on_top_is_a_conflict() -> None:
    r = rig(nodes=5)
    r.service.apply_wave("first", alias(NEWEST))
    assert r.run_until_not("first", "progressing").phase == "converged"
    r.service.apply_wave("second", alias("v20251118"))
    with pytest.raises(WaveConflict) as caught:
        r.service.rollback_wave("first")
    assert caught.value.other == "second"
    assert r.terms() == [{"alias": "al2023@v20251118"}]
    r.service.rollback_wave("second")
    assert r.run_until_not("second", "rolling-back").phase == "rolled-back"
    assert r.service.rollback_wave("first").phase == "rolling-back"
    assert r.terms() == [{"alias": f"al2023@{START}"}]


def test_unknown_waves_are_not_found() -> None:
    r = rig(nodes=2)
    with pytest.raises(WaveNotFound, match="no wave 'nope'"):
        r.service.wave("nope")
    with pytest.raises(WaveNotFound):
        r.service.rollback_wave("nope")


def test_an_invalid_wave_id_is_refused_before_anything() -> None:
    r = rig(nodes=2)
    with pytest.raises(InvalidRequest) as caught:
        r.service.apply_wave("Wave_1", alias(NEWEST))
    assert caught.value.fields[0][0] == "id"
    assert r.terms() == [{"alias": f"al2023@{START}"}]


def test_a_wave_never_converges_on_a_class_status_behind_its_spec() -> None:
    # found running Karpenter: it resolves the class a moment after the wave patches it, and
    # until then the class's status lists the previous images, which every node runs, so the
    # wave "converged" at once; the status's observedGeneration says it is behind
    r = rig(nodes=5)
    before = r.world.cluster.get(EC2NodeClass, "default")
    assert before.status is not None
    r.service.apply_wave("wave-1", alias(NEWEST))
    patched = r.world.cluster.get(EC2NodeClass, "default")
    assert patched.metadata.generation is not None
    resolved = Condition(type="AMIsReady", status="True", reason="AMIsReady", message="")
    stale = before.status.model_copy(
        update={
            "conditions": [
                resolved.model_copy(update={"observed_generation": patched.metadata.generation - 1})
            ]
        }
    )
    r.world.cluster.update(patched.model_copy(update={"status": stale}))
    wave = r.service.wave("wave-1")
    assert wave.phase == "progressing"
    assert wave.observed.holds is False
    assert "default has not resolved its amiSelectorTerms yet" in wave.observed.reason
    assert wave.observed.code == "selection-unresolved"
    assert wave.observed.state == "settling"


def _unready_on(r: Rig, target: set[str]) -> list[str]:
    """The launched NodeClaims on ``target`` images that never initialized (and are not going)."""
    return [
        c.name
        for c in r.world.cluster.list(NodeClaim)
        if (c.status.image_id or "") in target
        and c.status.provider_id
        and not is_true(c, "Initialized")
        and not c.metadata.deletion_timestamp
    ]


def _faulty_wave_waiting() -> tuple[Rig, set[str], list[str]]:
    """A wave to a faulty release, stepped until a replacement on it waits to get Ready: the rig,
    the wave's target images and the waiting NodeClaims."""
    r = rig(nodes=10, faulty_releases=(NEWEST,))
    r.service.apply_wave("wave-1", alias(NEWEST))
    target = set(r.service.wave("wave-1").target_images)
    for _ in range(40):
        if _unready_on(r, target):
            break
        r.sim.step(STEP)
    waiting = _unready_on(r, target)
    assert waiting, "a replacement on the faulty image is waiting to get Ready"
    return r, target, waiting


def test_a_rollback_deletes_the_nodes_that_never_got_ready_on_the_image_it_leaves() -> None:
    r, target, waiting = _faulty_wave_waiting()

    def unready() -> list[str]:
        return _unready_on(r, target)

    r.service.rollback_wave("wave-1")
    assert unready() == []
    abandoned = {e.object for e in r.world.timeline if e.type == "NodeClaimAbandoned"}
    assert {f"nodeclaim/{name}" for name in waiting} <= abandoned
    wave = r.run_until_not("wave-1", "rolling-back")
    assert wave.phase == "rolled-back"
    assert not target & r.images()


def test_a_rollback_goes_on_when_the_cluster_refuses_to_delete_a_never_ready_node() -> None:
    r, target, waiting = _faulty_wave_waiting()

    def unready() -> list[str]:
        return _unready_on(r, target)

    cluster = r.world.cluster
    delete = cluster.delete

    def refused(kind: object, name: str, *args: object, **kwargs: object) -> object:
        if kind is NodeClaim and name in waiting:
            raise ClusterError("nodeclaims is forbidden: cannot delete")
        return delete(kind, name, *args, **kwargs)  # type: ignore[arg-type]

    cluster.delete = refused  # type: ignore[method-assign, assignment]
    r.service.rollback_wave("wave-1")
    assert r.service.wave("wave-1").phase == "rolling-back"
    assert set(unready()) == set(waiting), "nothing it was refused is taken for deleted"
    refusals = {e.object for e in r.world.timeline if e.type == "NodeClaimNotAbandoned"}
    assert {f"nodeclaim/{name}" for name in waiting} <= refusals
    assert not any(e.type == "NodeClaimAbandoned" for e in r.world.timeline)
