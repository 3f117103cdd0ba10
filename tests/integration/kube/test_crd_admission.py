"""Karpenter's admission rules on a real API server: the chart's CRDs (generated from the models
with Karpenter's rules laid on, agent/api/crds.py) refuse every invalid example with the message
of the rule Karpenter's CRDs refuse it with, and store every valid one with Karpenter's defaults.

Objects are sent as ``kubectl`` sends them (``fieldValidation=Strict``), under names of this
module's own, and deleted after each test.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent.api.kinds import KARPENTER_KINDS
from agent.kube.port import NotFound
from agent.kube.real.rest import KubeRequestError, KubeREST
from common.kubemodel import parse_manifest
from tests.support.controlplane import ControlPlane

EXAMPLES = Path(__file__).resolve().parents[3] / "agent" / "examples"
INVALID = sorted((EXAMPLES / "invalid").glob("*.yaml"))
PLURALS = {"NodePool": "nodepools", "NodeClaim": "nodeclaims", "EC2NodeClass": "ec2nodeclasses"}
STRICT = {"fieldValidation": "Strict"}
MERGE = "application/merge-patch+json"

REFUSED = {
    "nodeclass-alias-and-tags-in-one-term": "spec.amiSelectorTerms: Invalid value: 'alias' is "
    "mutually exclusive, cannot be set with a combination of other fields in amiSelectorTerms",
    "nodeclass-alias-with-other-terms": "spec.amiSelectorTerms: Invalid value: 'alias' is "
    "mutually exclusive, cannot be set with a combination of other amiSelectorTerms",
    "nodeclass-family-mismatch": "spec: Invalid value: if set, amiFamily must be 'AL2023' or "
    "'Custom' when using an AL2023 alias",
    "nodeclass-hop-limit-range": "spec.metadataOptions.httpPutResponseHopLimit in body should be "
    "less than or equal to 64",
    "nodeclass-id-with-tags": "spec.amiSelectorTerms: Invalid value: 'id' is mutually exclusive, "
    "cannot be set with a combination of other fields in amiSelectorTerms",
    "nodeclass-kubelet-eviction-signal": "spec.kubelet.evictionHard: Invalid value: valid keys "
    "for evictionHard are ['memory.available','nodefs.available','nodefs.inodesFree',"
    "'imagefs.available','imagefs.inodesFree','pid.available']",
    "nodeclass-kubelet-gc-thresholds": "spec.kubelet: Invalid value: imageGCHighThresholdPercent "
    "must be greater than imageGCLowThresholdPercent",
    "nodeclass-no-family-without-alias": "spec: Invalid value: must specify amiFamily if "
    "amiSelectorTerms does not contain an alias",
    "nodeclass-no-security-groups": "spec.securityGroupSelectorTerms: Invalid value: "
    "securityGroupSelectorTerms cannot be empty",
    "nodeclass-restricted-tag": "spec.tags: Invalid value: tag contains a restricted tag matching "
    "kubernetes.io/cluster/",
    "nodeclass-role-and-profile": "spec: Invalid value: must specify exactly one of ['role', "
    "'instanceProfile']",
    # Karpenter's rule reads the missing map, so the API server names it with the rule's message.
    "nodeclass-soft-eviction-without-grace": "no such key: evictionSoftGracePeriod evaluating "
    "rule: evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod",
    "nodeclass-two-root-volumes": "spec.blockDeviceMappings: Invalid value: must have only one "
    "blockDeviceMappings with rootVolume",
    "nodeclass-ubuntu-family": 'spec.amiFamily: Unsupported value: "Ubuntu": supported values: '
    '"AL2", "AL2023", "Bottlerocket", "Custom", "Windows2019", "Windows2022", "Windows2025"',
    "nodeclass-windows-alias-version": "spec.amiSelectorTerms[0].alias: Invalid value: "
    "\"windows2022@v20240807\": windows families may only specify version 'latest'",
    "nodepool-budget-bad-reason": "spec.disruption.budgets[0].reasons[0]: Unsupported value: "
    '"Expired": supported values: "Underutilized", "Empty", "Drifted"',
    "nodepool-budget-percent-over-100": "spec.disruption.budgets[0].nodes in body should match "
    "'^((100|[0-9]{1,2})%|[0-9]+)$'",
    "nodepool-budget-schedule-without-duration": "spec.disruption.budgets: Invalid value: "
    "'schedule' must be set with 'duration'",
    "nodepool-consolidate-after-pattern": "spec.disruption.consolidateAfter in body should match "
    "'^(([0-9]+(s|m|h))+|Never)$'",
    "nodepool-expireafter-in-days": "spec.template.spec.expireAfter in body should match "
    "'^(([0-9]+(s|m|h))+|Never)$'",
    "nodepool-gt-two-values": "spec.template.spec.requirements: Invalid value: requirements "
    "operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value",
    "nodepool-in-without-values": "spec.template.spec.requirements: Invalid value: requirements "
    "with operator 'In' must have a value defined",
    "nodepool-minvalues-too-high": "spec.template.spec.requirements: Invalid value: requirements "
    "with 'minValues' must have at least that many values specified in the 'values' field",
    "nodepool-nodeclassref-without-group": "spec.template.spec.nodeClassRef.group: Required value",
    "nodepool-restricted-label": "spec.template.spec.requirements[0].key: Invalid value: "
    '"karpenter.sh/nodepool": label "karpenter.sh/nodepool" is restricted',
    "nodepool-restricted-label-domain": "spec.template.metadata.labels: Invalid value: label "
    'domain "karpenter.k8s.aws" is restricted',
    "nodepool-static-with-weight": "spec: Invalid value: 'weight' is not supported on static "
    "NodePools",
    "nodepool-too-many-budgets": "spec.disruption.budgets: Too many: 51: must have at most 50 "
    "items",
    "nodepool-unknown-operator": "spec.template.spec.requirements[0].operator: Unsupported value: "
    '"Equals": supported values: "Gte", "Lte", "In", "NotIn", "Exists", "DoesNotExist", "Gt", '
    '"Lt"',
    "nodepool-weight-out-of-range": "spec.weight in body should be less than or equal to 100",
}
"""Example → the API server's 422 answer, naming the rule as Karpenter's CRDs do."""

UNKNOWN_FIELD = {
    "nodepool-expireafter-in-disruption": "strict decoding error: unknown field "
    '"spec.disruption.expireAfter"',
}
"""Example → the API server's 400 answer: a field the schema lacks, refused as it decodes."""

NOT_SERVED = {"nodepool-v1beta1"}
"""Examples of an API version neither Karpenter v1.14 nor driftwave serves (404)."""

ADMITTED = {
    # Karpenter's CRDs do not check the values of well-known labels; Karpenter checks them once
    # the NodePool exists (its ValidationSucceeded condition), driftwave validate before.
    "nodepool-unknown-capacity-type",
}
"""Invalid examples the API server admits, as it does under Karpenter's CRDs."""

NODEPOOL_DEFAULTS = {
    "disruption": {
        "budgets": [{"nodes": "10%"}],
        "consolidateAfter": "0s",
        "consolidationPolicy": "WhenEmptyOrUnderutilized",
    },
    "template": {"spec": {"expireAfter": "720h"}},
}
METADATA_OPTIONS = {
    "httpEndpoint": "enabled",
    "httpProtocolIPv6": "disabled",
    "httpPutResponseHopLimit": 1,
    "httpTokens": "required",
}
DEFAULTS = {"NodePool": NODEPOOL_DEFAULTS, "EC2NodeClass": {"metadataOptions": METADATA_OPTIONS}}
"""Karpenter's defaults (its CRDs'), by kind: what the API server adds to a spec that omits it."""
OPTIONAL = {
    "NodePool": (("disruption",), ("template", "spec", "expireAfter")),
    "EC2NodeClass": (("metadataOptions",),),
}
"""The defaulted fields a minimal object leaves out."""


def _valid_objects() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in sorted((EXAMPLES / "v1").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc["kind"] in PLURALS:
                found.append((f"{path.stem}:{doc['kind']}/{doc['metadata']['name']}", doc))
    return found


VALID = _valid_objects()


class Objects:
    """Creates Karpenter objects under this module's names and deletes them at the end."""

    def __init__(self, rest: KubeREST) -> None:
        self.rest = rest
        self.created: list[str] = []

    @staticmethod
    def path(doc: dict[str, Any], name: str = "") -> str:
        base = f"/apis/{doc['apiVersion']}/{PLURALS[doc['kind']]}"
        return f"{base}/{name}" if name else base

    @staticmethod
    def name(text: str) -> str:
        """This module's object name for ``text``: ``adm-`` and ``text`` made a DNS subdomain."""
        return "adm-" + re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:200]

    def create(self, doc: dict[str, Any], name: str) -> dict[str, Any]:
        """Create ``doc`` under :meth:`name`; the object as the API server stored it."""
        body = copy.deepcopy(doc)
        body["metadata"] = {"name": self.name(name)}
        stored = self.rest.request("POST", self.path(body), body=body, query=STRICT)
        self.created.append(self.path(body, body["metadata"]["name"]))
        return stored

    def refusal(self, doc: dict[str, Any], name: str) -> KubeRequestError:
        """The API server's refusal of ``doc``; fails the test when it is stored instead."""
        with pytest.raises(KubeRequestError) as refused:
            self.create(doc, name)
        with pytest.raises(NotFound):
            self.rest.request("GET", self.path(doc, self.name(name)))
        return refused.value

    def cleanup(self) -> None:
        for path in self.created:
            try:
                self.rest.request("DELETE", path)
            except NotFound:
                continue


@pytest.fixture
def objects(controlplane: ControlPlane) -> Iterator[Objects]:
    rest = KubeREST.from_kubeconfig(str(controlplane.kubeconfig))
    made = Objects(rest)
    yield made
    made.cleanup()
    rest.close()


def _doc(stem: str) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((EXAMPLES / "invalid" / f"{stem}.yaml").read_text())
    return doc


def test_every_invalid_example_has_its_expected_answer() -> None:
    stems = {p.stem for p in INVALID}
    assert stems == set(REFUSED) | set(UNKNOWN_FIELD) | NOT_SERVED | ADMITTED
    assert len(REFUSED) >= 25


@pytest.mark.parametrize("stem", sorted(REFUSED))
def test_an_invalid_example_is_refused_naming_the_rule(objects: Objects, stem: str) -> None:
    refused = objects.refusal(_doc(stem), stem)
    assert refused.status == 422, refused
    assert refused.answer["reason"] == "Invalid"
    assert REFUSED[stem] in str(refused), str(refused)


@pytest.mark.parametrize("stem", sorted(UNKNOWN_FIELD))
def test_an_unknown_field_is_refused(objects: Objects, stem: str) -> None:
    refused = objects.refusal(_doc(stem), stem)
    assert refused.status == 400, refused
    assert UNKNOWN_FIELD[stem] in str(refused), str(refused)


@pytest.mark.parametrize("stem", sorted(NOT_SERVED))
def test_v1beta1_is_not_served(objects: Objects, stem: str) -> None:
    doc = _doc(stem)
    assert doc["apiVersion"] == "karpenter.sh/v1beta1"
    with pytest.raises(NotFound):
        objects.create(doc, stem)
    group = objects.rest.request("GET", "/apis/karpenter.sh")
    assert [v["version"] for v in group["versions"]] == ["v1"]


@pytest.mark.parametrize("stem", sorted(ADMITTED))
def test_karpenters_runtime_checks_are_not_admission_rules(objects: Objects, stem: str) -> None:
    stored = objects.create(_doc(stem), stem)
    assert (
        stored["spec"]["template"]["spec"]["requirements"]
        == (_doc(stem)["spec"]["template"]["spec"]["requirements"])
    )


def _with_defaults(defaults: Any, written: Any) -> Any:
    """``written`` with ``defaults`` filled in where it says nothing (maps merged key by key)."""
    if not isinstance(defaults, dict) or not isinstance(written, dict):
        return written
    merged = {k: _with_defaults(defaults.get(k), v) for k, v in written.items()}
    return {**defaults, **merged}


def _without_empty_maps(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_empty_maps(v) for k, v in value.items() if v != {}}
    return value


def _minimal(doc: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    for path in OPTIONAL.get(doc["kind"], ()):
        node = out["spec"]
        for key in path[:-1]:
            node = node[key]
        node.pop(path[-1], None)
    return out


@pytest.mark.parametrize("variant", ["as written", "minimal"])
@pytest.mark.parametrize(("name", "doc"), VALID, ids=[name for name, _ in VALID])
def test_a_valid_example_is_stored_with_karpenters_defaults(
    objects: Objects, name: str, doc: dict[str, Any], variant: str
) -> None:
    sent = doc if variant == "as written" else _minimal(doc)
    stored = objects.create(sent, f"{name}-{variant}")
    expected = _with_defaults(DEFAULTS.get(doc["kind"], {}), sent["spec"])
    assert stored["spec"] == expected
    model = parse_manifest(KARPENTER_KINDS[(doc["apiVersion"], doc["kind"])], sent)
    assert _without_empty_maps(model.to_full_manifest()["spec"]) == stored["spec"], (
        "driftwave's defaults differ from the API server's"
    )


def test_every_default_is_exercised() -> None:
    minimal = {doc["kind"] for _, doc in VALID}
    assert minimal == {"NodePool", "EC2NodeClass"}
    written = [
        d["spec"].get("metadataOptions", {}) for _, d in VALID if d["kind"] == "EC2NodeClass"
    ]
    assert any(set(m) != set(METADATA_OPTIONS) for m in written), "a partial metadataOptions"
    pools = [d["spec"] for _, d in VALID if d["kind"] == "NodePool"]
    assert any("disruption" not in p for p in pools)
    assert any("disruption" in p and "budgets" not in p["disruption"] for p in pools)


NODECLAIM: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodeClaim",
    "metadata": {"name": "claim"},
    "spec": {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
        "requirements": [{"key": "karpenter.sh/nodepool", "operator": "In", "values": ["a"]}],
    },
}


def _refused_update(objects: Objects, path: str, patch: dict[str, Any]) -> str:
    with pytest.raises(KubeRequestError) as refused:
        objects.rest.request("PATCH", path, body=patch, content_type=MERGE)
    assert refused.value.status == 422, refused.value
    return str(refused.value)


def test_a_nodeclaim_defaults_its_expiry_and_its_spec_is_immutable(objects: Objects) -> None:
    stored = objects.create(NODECLAIM, "nodeclaim")
    assert stored["spec"]["expireAfter"] == "720h"
    path = objects.path(NODECLAIM, stored["metadata"]["name"])
    message = _refused_update(objects, path, {"spec": {"expireAfter": "24h"}})
    assert "spec: Invalid value: spec is immutable" in message
    objects.rest.request(
        "PATCH", path, body={"metadata": {"labels": {"a": "b"}}}, content_type=MERGE
    )


def test_a_nodepools_node_class_group_and_kind_and_provisioning_mode_are_fixed(
    objects: Objects,
) -> None:
    doc = next(d for _, d in VALID if d["kind"] == "NodePool")
    static = copy.deepcopy(doc)
    static["spec"]["replicas"] = 2
    static["spec"].pop("limits", None)
    path = objects.path(doc, objects.create(static, "static-pool")["metadata"]["name"])
    ref = "spec.template.spec.nodeClassRef: Invalid value"
    message = _refused_update(
        objects, path, {"spec": {"template": {"spec": {"nodeClassRef": {"group": "other.io"}}}}}
    )
    assert f"{ref}: nodeClassRef.group is immutable" in message
    message = _refused_update(
        objects, path, {"spec": {"template": {"spec": {"nodeClassRef": {"kind": "Other"}}}}}
    )
    assert f"{ref}: nodeClassRef.kind is immutable" in message
    message = _refused_update(objects, path, {"spec": {"replicas": None}})
    assert (
        "spec: Invalid value: Cannot transition NodePool between static (replicas set) and "
        "dynamic (replicas unset) provisioning modes"
    ) in message
    message = _refused_update(objects, path, {"spec": {"limits": {"cpu": "10"}}})
    assert "only 'limits.nodes' is supported on static NodePools" in message
    allowed = {"spec": {"replicas": 3, "template": {"spec": {"nodeClassRef": {"name": "other"}}}}}
    stored = objects.rest.request("PATCH", path, body=allowed, content_type=MERGE)
    assert stored["spec"]["replicas"] == 3


def test_status_follows_karpenters_condition_rules(objects: Objects) -> None:
    doc = next(d for _, d in VALID if d["kind"] == "NodePool")
    path = objects.path(doc, objects.create(doc, "status-pool")["metadata"]["name"]) + "/status"
    ready = {"type": "Ready", "status": "True", "lastTransitionTime": "2025-01-01T00:00:00Z"}
    message = _refused_update(objects, path, {"status": {"conditions": [ready]}})
    assert "status.conditions[0].reason: Required value" in message
    assert "status.conditions[0].message: Required value" in message
    bad = {**ready, "reason": "not a reason", "message": ""}
    message = _refused_update(objects, path, {"status": {"conditions": [bad]}})
    assert "conditions[0].reason in body should match '^[A-Za-z]" in message
    good = {**ready, "reason": "Ready", "message": ""}
    stored = objects.rest.request(
        "PATCH", path, body={"status": {"conditions": [good]}}, content_type=MERGE
    )
    assert stored["status"] == {"conditions": [good], "nodes": 0}
