"""The machine verdict of a wave's observation: each thing the agent finds not holding has its
stable code and state, beside the unchanged words of ``reason``."""

from __future__ import annotations

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.kube import Pod
from agent.api.nodeclaim import NodeClaim
from agent.service.waves import verdict_code
from common.kubemodel import Condition
from common.wire.observation import CODE_STATE, Observation, VerdictCode, VerdictState
from common.wire.waves import WaveDocument
from tests.support.kubeobjects import pod

from .helpers import NEWEST, Rig, alias, rig, wire


def _converged(nodes: int = 4) -> Rig:
    r = rig(nodes=nodes)
    r.service.apply_wave("wave-1", alias(NEWEST))
    assert r.run_until_not("wave-1", "progressing").phase == "converged"
    return r


def _verdict(r: Rig, wave_id: str = "wave-1") -> Observation:
    """The observation of the wave as the agent wrote it (its verdict written, not read in)."""
    document = r.service.wave(wave_id)
    assert {"state", "code"} <= set(wire(document)["observed"])
    return WaveDocument.model_validate(wire(document), extra="forbid").observed


def _mark(r: Rig, condition: str) -> None:
    """Set ``condition`` True on one NodeClaim of the cluster."""
    claim = r.world.cluster.list(NodeClaim)[0]
    marked = Condition(type=condition, status="True", reason=condition, message="")
    status = claim.status.model_copy(update={"conditions": [*claim.status.conditions, marked]})
    r.world.cluster.update(claim.model_copy(update={"status": status}))


def test_a_converged_wave_holds() -> None:
    seen = _verdict(_converged())
    assert (seen.holds, seen.state, seen.code, seen.reason) == (
        True,
        VerdictState.HOLDS,
        VerdictCode.HOLDS,
        "",
    )


def test_nodes_still_on_the_old_images_are_settling() -> None:
    r = rig(nodes=4)
    _, wave = r.service.apply_wave("wave-1", alias(NEWEST))
    seen = Observation.model_validate(wave.observed)
    assert (seen.state, seen.code) == (VerdictState.SETTLING, VerdictCode.NODES_NOT_ON_TARGET)
    assert "nodes run the images their classes select" in seen.reason


def test_no_node_while_pods_wait_is_settling() -> None:
    r = rig(nodes=0)
    r.world.cluster.create(Pod.model_validate(pod("waiting", "default", {})))
    _, wave = r.service.apply_wave("wave-1", alias(NEWEST))
    seen = Observation.model_validate(wave.observed)
    assert (seen.state, seen.code) == (VerdictState.SETTLING, VerdictCode.NODES_MISSING)
    assert seen.reason == "no node in the wave's NodePools while pods wait for one"


def test_a_class_no_longer_carrying_the_selection_is_a_regression_whatever_the_nodes_do() -> None:
    r = rig(nodes=4)
    r.service.apply_wave("wave-1", alias(NEWEST))
    nodeclass = r.world.cluster.get(EC2NodeClass, "default")
    terms = [
        t.model_copy(update={"alias": "al2023@v20251202"})
        for t in nodeclass.spec.ami_selector_terms
    ]
    spec = nodeclass.spec.model_copy(update={"ami_selector_terms": terms})
    r.world.cluster.update(nodeclass.model_copy(update={"spec": spec}))
    seen = _verdict(r)
    assert (seen.state, seen.code) == (VerdictState.REGRESSED, VerdictCode.SELECTION_MISSING)
    assert seen.reason.startswith("EC2NodeClass default no longer carries the amiSelectorTerms")
    assert "nodes run the images" in seen.reason, "the settling problem is still in the words"


def test_a_control_plane_off_the_target_version_is_a_regression() -> None:
    r = rig(nodes=4)
    r.service.apply_wave("upgrade", {"target": {"kubernetesVersion": "1.31"}})
    r.world.kubernetes_version = "1.30"
    seen = _verdict(r, "upgrade")
    assert (seen.state, seen.code) == (VerdictState.REGRESSED, VerdictCode.CONTROL_PLANE_VERSION)
    assert "the control plane runs 1.30, not 1.31" in seen.reason


def test_a_class_resolving_to_no_image_is_a_regression() -> None:
    r = _converged()
    nodeclass = r.world.cluster.get(EC2NodeClass, "default")
    assert nodeclass.status is not None
    emptied = nodeclass.status.model_copy(update={"amis": []})
    r.world.cluster.update(nodeclass.model_copy(update={"status": emptied}))
    seen = _verdict(r)
    assert (seen.state, seen.code) == (VerdictState.REGRESSED, VerdictCode.NO_IMAGE)
    assert seen.reason.startswith("EC2NodeClass default resolves to no image")


def test_drifted_and_disrupted_nodes_are_settling() -> None:
    r = _converged()
    _mark(r, "Drifted")
    seen = _verdict(r)
    assert (seen.state, seen.code, seen.reason) == (
        VerdictState.SETTLING,
        VerdictCode.NODES_DRIFTED,
        "1 node(s) drifted",
    )
    r = _converged()
    _mark(r, "DisruptionReason")
    seen = _verdict(r)
    assert (seen.state, seen.code, seen.reason) == (
        VerdictState.SETTLING,
        VerdictCode.NODES_DISRUPTING,
        "1 node(s) being disrupted",
    )


def test_a_regression_named_after_a_settling_problem_still_decides_the_code() -> None:
    settling = (VerdictCode.NODES_DRIFTED, "1 node(s) drifted")
    regressed = (VerdictCode.NO_IMAGE, "EC2NodeClass a resolves to no image")
    assert verdict_code([]) is VerdictCode.HOLDS
    assert verdict_code([settling]) is VerdictCode.NODES_DRIFTED
    assert verdict_code([settling, regressed]) is VerdictCode.NO_IMAGE


def test_every_code_has_one_state_and_only_the_reader_writes_unknown() -> None:
    assert set(CODE_STATE) == set(VerdictCode)
    assert [c for c, s in CODE_STATE.items() if s is VerdictState.HOLDS] == [VerdictCode.HOLDS]
    assert [c for c, s in CODE_STATE.items() if s is VerdictState.UNKNOWN] == [VerdictCode.UNKNOWN]
