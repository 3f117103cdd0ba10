"""Waves kept in the cluster: a restarted or failed-over agent knows them; the observation a wave
document carries is the cluster as it is now; a rollback from the caller's record works on an
agent that has no record of the wave."""

from __future__ import annotations

import json

import pytest

from agent.api.ec2nodeclass import EC2NodeClass
from agent.service import AgentService, InvalidRequest, WaveNotFound
from agent.service.wavestore import ANNOTATION, KEEP, from_record, records_of, to_record
from agent.sim.realtime import RealTimeSimulation
from common.kubemodel import parse_manifest
from common.wire.waves import WaveDocument

from .helpers import NEWEST, START, Rig, alias, rig, wire


def _restart(r: Rig) -> Rig:
    """A new agent over the same cluster (a restarted process, a failed-over replica)."""
    service = AgentService(r.world, name="test-member")
    sim = RealTimeSimulation(r.world, speed=1.0, lock=service.lock, on_step=service.refresh)
    return Rig(r.world, service, sim)


def _set_terms(r: Rig, terms: list[dict[str, str]]) -> None:
    """Edit the class's amiSelectorTerms as a user with kubectl would (the annotation stays)."""
    stored = r.world.cluster.get(EC2NodeClass, "default")
    manifest = stored.to_manifest()
    manifest["spec"]["amiSelectorTerms"] = terms
    manifest.pop("status", None)
    edited = parse_manifest(EC2NodeClass, manifest)
    r.world.cluster.update(edited.model_copy(update={"status": stored.status}))


def test_the_wave_is_recorded_on_the_class_in_the_same_update_as_the_change() -> None:
    r = rig(nodes=6)
    r.service.apply_wave("wave-1", {**alias(NEWEST), "rollout": "r1"})
    stored = r.world.cluster.get(EC2NodeClass, "default")
    (record,) = records_of(stored)
    assert record["id"] == "wave-1"
    assert record["before"]["default"]["amiSelectorTerms"] == [{"alias": f"al2023@{START}"}]
    assert record["applied"]["default"]["amiSelectorTerms"] == [{"alias": f"al2023@{NEWEST}"}]
    assert record["request"]["rollout"] == "r1"
    wave = from_record(json.loads(json.dumps(record)))
    assert to_record(wave) == record


def test_a_restarted_agent_knows_a_wave_under_way_and_follows_it_to_the_end() -> None:
    r = rig(nodes=12)
    r.service.apply_wave("wave-1", alias(NEWEST))
    r.sim.step(60)
    again = _restart(r)
    wave = again.service.wave("wave-1")
    assert wave.phase == "progressing"
    assert wave.previous["default"].ami_selector_terms == [{"alias": f"al2023@{START}"}]
    assert again.service.status().active_wave == "wave-1"
    wave = again.run_until_not("wave-1", "progressing")
    assert wave.phase == "converged"
    assert wave.observed.holds is True
    # applying the same wave again on the new agent changes nothing
    created, _ = again.service.apply_wave("wave-1", alias(NEWEST))
    assert created is False


def test_a_failed_over_agent_rolls_back_what_its_predecessor_applied() -> None:
    r = rig(nodes=8)
    before = r.images()
    r.service.apply_wave("wave-1", alias(NEWEST))
    assert r.run_until_not("wave-1", "progressing").phase == "converged"
    again = _restart(r)
    assert again.service.rollback_wave("wave-1").phase == "rolling-back"
    wave = again.run_until_not("wave-1", "rolling-back")
    assert wave.phase == "rolled-back"
    assert wave.observed.expected == "previous"
    assert wave.observed.holds is True
    assert again.terms() == [{"alias": f"al2023@{START}"}]
    assert again.images() == before
    # and a third agent reads the rolled-back phase from the cluster
    assert _restart(again).service.wave("wave-1").phase == "rolled-back"


def test_the_observation_shows_a_class_edited_after_the_wave_converged() -> None:
    r = rig(nodes=6)
    r.service.apply_wave("wave-1", alias(NEWEST))
    wave = r.run_until_not("wave-1", "progressing")
    assert wave.phase == "converged"
    assert wave.observed.holds is True
    assert wave.observed.on_expected == wave.observed.nodes == 6
    _set_terms(r, [{"alias": f"al2023@{START}"}])
    r.sim.step(30)
    wave = r.service.wave("wave-1")
    WaveDocument.model_validate(wire(wave), extra="forbid")
    assert wave.phase == "converged"  # the history does not change ...
    observed = wave.observed  # ... but the observation does
    assert observed.holds is False
    assert "EC2NodeClass default no longer carries the amiSelectorTerms the wave set" in (
        observed.reason
    )


def test_an_agent_without_the_record_rolls_back_from_the_callers_record() -> None:
    r = rig(nodes=6)
    before = r.images()
    r.service.apply_wave("wave-1", alias(NEWEST))
    assert r.run_until_not("wave-1", "progressing").phase == "converged"
    # the record is lost (say, the class was re-created from git without the annotation)
    stored = r.world.cluster.get(EC2NodeClass, "default")
    annotations = {k: v for k, v in stored.metadata.annotations.items() if k != ANNOTATION}
    metadata = stored.metadata.model_copy(update={"annotations": annotations})
    r.world.cluster.update(stored.model_copy(update={"metadata": metadata}))
    lost = _restart(r)
    with pytest.raises(WaveNotFound):
        lost.service.rollback_wave("wave-1")
    recorded = {
        "previous": {"default": {"amiSelectorTerms": [{"alias": f"al2023@{START}"}]}},
        "imagesBefore": sorted(before),
        "kubernetesVersionBefore": r.world.kubernetes_version,
    }
    wave = lost.service.rollback_wave("wave-1", recorded)
    assert wave.phase == "rolling-back"
    assert wave.reason == "restored the previous amiSelectorTerms"
    assert lost.run_until_not("wave-1", "rolling-back").phase == "rolled-back"
    assert lost.terms() == [{"alias": f"al2023@{START}"}]
    assert lost.images() == before


def test_a_rollback_where_the_wave_never_landed_says_so_from_the_cluster() -> None:
    r = rig(nodes=4)
    recorded = {"previous": {"default": {"amiSelectorTerms": [{"alias": f"al2023@{START}"}]}}}
    wave = r.service.rollback_wave("never-here", recorded)
    assert "already carried the previous amiSelectorTerms: nothing to put back" in wave.reason
    wave = r.run_until_not("never-here", "rolling-back")
    assert wave.phase == "rolled-back"
    assert wave.observed.holds is True


def test_a_rollback_record_naming_a_missing_class_is_refused_and_changes_nothing() -> None:
    r = rig(nodes=4)
    recorded = {"previous": {"nope": {"amiSelectorTerms": [{"alias": f"al2023@{START}"}]}}}
    with pytest.raises(InvalidRequest, match=r"previous\.nope: no EC2NodeClass"):
        r.service.rollback_wave("w", recorded)
    with pytest.raises(InvalidRequest, match=r"previous"):
        r.service.rollback_wave("w", {"previous": {}})
    with pytest.raises(WaveNotFound):
        r.service.wave("w")


def test_a_class_keeps_only_its_latest_wave_records() -> None:
    r = rig(nodes=2)
    releases = [START, NEWEST]
    for i in range(KEEP + 2):
        wave_id = f"w{i}"
        r.service.apply_wave(wave_id, alias(releases[(i + 1) % 2]))
        r.run_until_not(wave_id, "progressing")
    records = records_of(r.world.cluster.get(EC2NodeClass, "default"))
    assert [x["id"] for x in records] == [f"w{i}" for i in range(2, KEEP + 2)]
