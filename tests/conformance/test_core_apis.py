"""Conformance of the ``karpenter.sh/v1`` API to Karpenter's API tests: defaulting and the
NodeClaim's validation. This module also holds :class:`Admission`, how every API conformance
test (core and AWS) judges one object.

Karpenter's API tests create an object on a real API server carrying its CRDs and expect it to
be stored or refused; some also run the NodePool's runtime validation (what Karpenter reports in
its ``ValidationSucceeded`` condition once the object exists). driftwave answers both questions
twice: its chart's CRDs on a real API server must admit or refuse the object as Karpenter's do,
and its own validation (what ``driftwave validate`` runs on each document) must accept exactly
what Karpenter would run with: an object the API server admits and the runtime validation
passes. Where a test asserts the runtime validation, Karpenter's own verdict (the oracle) is
checked too, so each mirrored case is known to say what Karpenter says.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable
from typing import Any

import pytest

from agent.api.kinds import KARPENTER_KINDS
from agent.kube.port import NotFound
from agent.kube.real.rest import KubeRequestError, KubeREST
from common.documents import Document, Finding, check_document
from common.kubemodel import parse_manifest
from tests.conformance.karpenter import mirrors
from tests.support.oracle import KarpenterOracle

SUITE = "core-apis"

PLURALS = {"NodePool": "nodepools", "NodeClaim": "nodeclaims", "EC2NodeClass": "ec2nodeclasses"}
STRICT = {"fieldValidation": "Strict"}
MERGE = "application/merge-patch+json"

TEST_NODE_CLASS = {"group": "karpenter.test.sh", "kind": "TestNodeClass", "name": "default"}
"""The node class Karpenter's core API tests refer to (a test kind of theirs)."""
CAPACITY_TYPE_EXISTS = {"key": "karpenter.sh/capacity-type", "operator": "Exists"}

CORE_WELL_KNOWN_LABELS = (
    "karpenter.sh/nodepool",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "node.kubernetes.io/instance-type",
    "kubernetes.io/arch",
    "kubernetes.io/os",
    "karpenter.sh/capacity-type",
    "node.kubernetes.io/windows-build",
)
"""Karpenter core's well-known labels (the AWS provider adds its own to these)."""
CORE_RESTRICTED_LABEL_DOMAINS = ("karpenter.sh",)
"""Karpenter core's restricted label domains (the AWS provider adds ``karpenter.k8s.aws``)."""
CORE_RESTRICTED_LABELS = ("kubernetes.io/hostname",)


class Admission:
    """Judges manifests as Karpenter's API tests do: the real API server with the chart's CRDs,
    driftwave's own validation, and (for runtime validation) Karpenter itself."""

    def __init__(self, rest: KubeREST, oracle: Callable[[], KarpenterOracle]) -> None:
        self.rest = rest
        self._oracle = oracle
        self._names = itertools.count()

    @staticmethod
    def path(doc: dict[str, Any], name: str = "") -> str:
        """The API path of ``doc``'s resource (and of the object ``name``)."""
        base = f"/apis/{doc['apiVersion']}/{PLURALS[doc['kind']]}"
        return f"{base}/{name}" if name else base

    def _named(self, doc: dict[str, Any]) -> dict[str, Any]:
        body = copy.deepcopy(doc)
        body["metadata"] = {**body.get("metadata", {}), "name": f"conf-{next(self._names)}"}
        return body

    def stored(self, doc: dict[str, Any]) -> dict[str, Any]:
        """Create ``doc`` (under a name of its own); the object as the API server stored it.
        Fails the test when the API server refuses it."""
        body = self._named(doc)
        try:
            answer: dict[str, Any] = self.rest.request(
                "POST", self.path(body), body=body, query=STRICT
            )
        except KubeRequestError as exc:
            pytest.fail(f"the API server refused what Karpenter's CRDs admit: {exc}")
        return answer

    def server_refusal(self, doc: dict[str, Any]) -> str:
        """The API server's refusal of ``doc`` (400 or 422); fails the test when it stores it."""
        body = self._named(doc)
        with pytest.raises(KubeRequestError) as refused:
            self.rest.request("POST", self.path(body), body=body, query=STRICT)
        assert refused.value.status in (400, 422), refused.value
        with pytest.raises(NotFound):
            self.rest.request("GET", self.path(body, body["metadata"]["name"]))
        return str(refused.value)

    def update_refusal(self, stored: dict[str, Any], patch: dict[str, Any]) -> str:
        """The API server's refusal (422) of a merge patch to the ``stored`` object."""
        path = self.path(stored, stored["metadata"]["name"])
        with pytest.raises(KubeRequestError) as refused:
            self.rest.request("PATCH", path, body=patch, content_type=MERGE)
        assert refused.value.status == 422, refused.value
        return str(refused.value)

    def updated(self, stored: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
        """Apply a merge patch to the ``stored`` object; the object as stored after it."""
        path = self.path(stored, stored["metadata"]["name"])
        try:
            answer: dict[str, Any] = self.rest.request(
                "PATCH", path, body=patch, content_type=MERGE
            )
        except KubeRequestError as exc:
            pytest.fail(f"the API server refused an update Karpenter's CRDs admit: {exc}")
        return answer

    @staticmethod
    def driftwave_issues(doc: dict[str, Any]) -> list[Finding]:
        """The errors ``driftwave validate`` reports for ``doc`` (empty: accepted; warnings,
        which never fail, are left out)."""
        _, findings = check_document(
            Document("conformance", 1, copy.deepcopy(doc)), KARPENTER_KINDS
        )
        return [finding for finding in findings if finding.severity == "error"]

    def karpenter_runtime(self, doc: dict[str, Any]) -> tuple[bool, str]:
        """Karpenter's runtime validation of a NodePool: (valid, message)."""
        answer = self._oracle().ask("nodepool-runtime-validate", nodePool=doc)
        return bool(answer["valid"]), str(answer["message"])

    def admitted(self, doc: dict[str, Any], runtime: bool = False) -> dict[str, Any]:
        """``doc`` is admitted by the API server and accepted by driftwave (and, with
        ``runtime``, passes Karpenter's runtime validation); the stored object."""
        if runtime:
            valid, message = self.karpenter_runtime(doc)
            assert valid, f"Karpenter's runtime validation refuses it: {message}"
        found = self.driftwave_issues(doc)
        assert not found, f"driftwave refuses what Karpenter accepts: {found}"
        return self.stored(doc)

    def refused(self, doc: dict[str, Any], runtime: bool = False) -> list[Finding]:
        """``doc`` is refused by the API server and by driftwave (and, with ``runtime``, by
        Karpenter's runtime validation too); driftwave's issues."""
        self.server_refusal(doc)
        return self._refused_by_driftwave(doc, runtime)

    def refused_at_runtime_only(self, doc: dict[str, Any]) -> list[Finding]:
        """``doc`` is admitted by the API server but Karpenter's runtime validation refuses it
        (Karpenter would mark the NodePool not ready), and driftwave refuses it before it is
        applied; driftwave's issues."""
        self.stored(doc)
        return self._refused_by_driftwave(doc, runtime=True)

    def _refused_by_driftwave(self, doc: dict[str, Any], runtime: bool) -> list[Finding]:
        if runtime:
            valid, _ = self.karpenter_runtime(doc)
            assert not valid, "Karpenter's runtime validation accepts it"
        found = self.driftwave_issues(doc)
        assert found, "driftwave accepts what Karpenter refuses"
        return found


@pytest.fixture
def api(rest: KubeREST, request: pytest.FixtureRequest) -> Admission:
    """Judges manifests on the real API server, by driftwave, and by Karpenter (the oracle,
    started only for the tests that ask it)."""

    def oracle() -> KarpenterOracle:
        found: KarpenterOracle = request.getfixturevalue("karpenter_oracle")
        return found

    return Admission(rest, oracle)


def core_nodepool(**spec: Any) -> dict[str, Any]:
    """The NodePool Karpenter's core API tests start from; ``spec`` keys are added."""
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "pool"},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": dict(TEST_NODE_CLASS),
                    "requirements": [dict(CAPACITY_TYPE_EXISTS)],
                }
            },
            **copy.deepcopy(spec),
        },
    }


def template(pool: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """``pool`` with ``fields`` set in its NodeClaim template's spec."""
    out = copy.deepcopy(pool)
    out["spec"]["template"]["spec"].update(copy.deepcopy(fields))
    return out


def template_metadata(pool: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """``pool`` with ``fields`` (labels, annotations) set in its template's metadata."""
    out = copy.deepcopy(pool)
    out["spec"]["template"].setdefault("metadata", {}).update(copy.deepcopy(fields))
    return out


def core_nodeclaim(**spec: Any) -> dict[str, Any]:
    """The NodeClaim Karpenter's core API tests start from; ``spec`` keys are added."""
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": "claim"},
        "spec": {
            "nodeClassRef": dict(TEST_NODE_CLASS),
            "requirements": [dict(CAPACITY_TYPE_EXISTS)],
            **copy.deepcopy(spec),
        },
    }


def req(key: str, operator: str, *values: str, **extra: Any) -> dict[str, Any]:
    """A requirement (``values`` left out when none are given)."""
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    out.update(extra)
    return out


# --- CEL/Default (nodepool_default_test.go) --------------------------------------------------

DEFAULT_TEST = "pkg/apis/v1/nodepool_default_test.go"


@mirrors(
    DEFAULT_TEST,
    "CEL/Default / Defaults/TopLevel / should default the disruption stanza when undefined",
)
def test_default_disruption_when_undefined(api: Admission) -> None:
    pool = core_nodepool()
    stored = api.admitted(pool)["spec"]["disruption"]
    expected = {
        "consolidateAfter": "0s",
        "consolidationPolicy": "WhenEmptyOrUnderutilized",
        "budgets": [{"nodes": "10%"}],
    }
    assert stored == expected
    model = parse_manifest(KARPENTER_KINDS[("karpenter.sh/v1", "NodePool")], pool)
    assert model.to_full_manifest()["spec"]["disruption"] == expected


# --- Validation (nodeclaim_validation_cel_test.go) -------------------------------------------

CLAIM_TEST = "pkg/apis/v1/nodeclaim_validation_cel_test.go"
ZONE = "topology.kubernetes.io/zone"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"

VALID_TAINTS = [
    {"key": "a", "value": "b", "effect": "NoSchedule"},
    {"key": "c", "value": "d", "effect": "NoExecute"},
    {"key": "e", "value": "f", "effect": "PreferNoSchedule"},
    {"key": "key-only", "effect": "NoExecute"},
]
SUPPORTED_OPS = [
    req(ZONE, "In", "test"),
    req(ZONE, "Gt", "1"),
    req(ZONE, "Lt", "1"),
    req(ZONE, "NotIn"),
    req(ZONE, "Exists"),
]
BAD_BOUNDS = [
    (op, values)
    for op in ("Gt", "Lt", "Gte", "Lte")
    for values in ((), ("1", "2"), ("a",), ("-1",))
]
"""Integer-comparison requirements without exactly one non-negative integer value."""


def _bound_ids(case: tuple[str, tuple[str, ...]]) -> str:
    return f"{case[0]}-{'-'.join(case[1]) or 'none'}"


@mirrors(CLAIM_TEST, "Validation / Taints / should succeed for valid taints")
def test_claim_valid_taints(api: Admission) -> None:
    stored = api.admitted(core_nodeclaim(taints=VALID_TAINTS))
    assert stored["spec"]["taints"] == VALID_TAINTS


@mirrors(CLAIM_TEST, "Validation / Taints / should fail for invalid taint keys")
@pytest.mark.parametrize("effect", ["", "NoSchedule"], ids=["as Go sends it", "valid effect"])
def test_claim_invalid_taint_key(api: Admission, effect: str) -> None:
    found = api.refused(core_nodeclaim(taints=[{"key": "???", "effect": effect}]))
    assert "spec.taints[0].key" in [issue.path for issue in found]


@mirrors(CLAIM_TEST, "Validation / Taints / should fail for missing taint key")
@pytest.mark.parametrize("taint", [{"effect": "NoSchedule"}, {"key": "", "effect": "NoSchedule"}])
def test_claim_missing_taint_key(api: Admission, taint: dict[str, str]) -> None:
    found = api.refused(core_nodeclaim(taints=[taint]))
    assert [issue.path for issue in found] == ["spec.taints[0].key"]


@mirrors(CLAIM_TEST, "Validation / Taints / should fail for invalid taint value")
def test_claim_invalid_taint_value(api: Admission) -> None:
    taint = {"key": "invalid-value", "effect": "NoSchedule", "value": "???"}
    api.refused(core_nodeclaim(taints=[taint]))


@mirrors(CLAIM_TEST, "Validation / Taints / should fail for invalid taint effect")
def test_claim_invalid_taint_effect(api: Admission) -> None:
    api.refused(core_nodeclaim(taints=[{"key": "invalid-effect", "effect": "???"}]))


@mirrors(CLAIM_TEST, "Validation / Taints / should not fail for same key with different effects")
def test_claim_same_taint_key_different_effects(api: Admission) -> None:
    taints = [{"key": "a", "effect": "NoSchedule"}, {"key": "a", "effect": "NoExecute"}]
    assert api.admitted(core_nodeclaim(taints=taints))["spec"]["taints"] == taints


@mirrors(CLAIM_TEST, "Validation / NodeClassRef / should succeed for valid group")
def test_claim_valid_node_class_group(api: Admission) -> None:
    ref = {"group": "karpenter.test.sh", "kind": "TestNodeClass", "name": "nodeclass-test"}
    assert api.admitted(core_nodeclaim(nodeClassRef=ref))["spec"]["nodeClassRef"] == ref


@mirrors(CLAIM_TEST, "Validation / NodeClassRef / should fail for invalid group")
def test_claim_invalid_node_class_group(api: Admission) -> None:
    ref = {"group": "karpenter.test.sh/v1", "kind": "TestNodeClass", "name": "nodeclass-test"}
    found = api.refused(core_nodeclaim(nodeClassRef=ref))
    assert [issue.path for issue in found] == ["spec.nodeClassRef.group"]


@mirrors(CLAIM_TEST, "Validation / Requirements / should allow supported ops")
def test_claim_supported_ops(api: Admission) -> None:
    stored = api.admitted(core_nodeclaim(requirements=SUPPORTED_OPS))
    assert [r["operator"] for r in stored["spec"]["requirements"]] == [
        "In",
        "Gt",
        "Lt",
        "NotIn",
        "Exists",
    ]


@mirrors(CLAIM_TEST, "Validation / Requirements / should fail for unsupported ops")
def test_claim_unsupported_ops(api: Admission) -> None:
    found = api.refused(core_nodeclaim(requirements=[req(ZONE, "unknown", "test")]))
    assert [issue.path for issue in found] == ["spec.requirements[0].operator"]


@mirrors(CLAIM_TEST, "Validation / Requirements / should fail for restricted domains")
@pytest.mark.parametrize("domain", CORE_RESTRICTED_LABEL_DOMAINS)
def test_claim_restricted_domains(api: Admission, domain: str) -> None:
    api.refused(core_nodeclaim(requirements=[req(f"{domain}/test", "In", "test")]))


@mirrors(CLAIM_TEST, "Validation / Requirements / should fail for restricted labels")
@pytest.mark.parametrize("label", CORE_RESTRICTED_LABELS)
def test_claim_restricted_labels(api: Admission, label: str) -> None:
    api.refused(core_nodeclaim(requirements=[req(f"{label}/test", "In", "test")]))


@mirrors(CLAIM_TEST, "Validation / Requirements / should allow kubernetes domains")
@pytest.mark.parametrize("domain", ["kubernetes.io", "k8s.io"])
def test_claim_kubernetes_domains(api: Admission, domain: str) -> None:
    api.admitted(core_nodeclaim(requirements=[req(f"{domain}/test", "In", "test")]))


@mirrors(CLAIM_TEST, "Validation / Requirements / should allow kubernetes subdomains")
@pytest.mark.parametrize("domain", ["kubernetes.io", "k8s.io"])
def test_claim_kubernetes_subdomains(api: Admission, domain: str) -> None:
    api.admitted(core_nodeclaim(requirements=[req(f"subdomain.{domain}/test", "In", "test")]))


@mirrors(CLAIM_TEST, "Validation / Requirements / should allow well known label exceptions")
@pytest.mark.parametrize(
    "label", [k for k in CORE_WELL_KNOWN_LABELS if k != "karpenter.sh/nodepool"]
)
def test_claim_well_known_labels(api: Admission, label: str) -> None:
    api.admitted(core_nodeclaim(requirements=[req(label, "In", "test")]))


@mirrors(
    CLAIM_TEST,
    "Validation / Requirements / should allow non-empty set after removing overlapped value",
)
def test_claim_overlapping_in_and_not_in(api: Admission) -> None:
    reqs = [req(ZONE, "In", "test", "foo"), req(ZONE, "NotIn", "test", "bar")]
    assert api.admitted(core_nodeclaim(requirements=reqs))["spec"]["requirements"] == reqs


@mirrors(CLAIM_TEST, "Validation / Requirements / should allow empty requirements")
def test_claim_empty_requirements(api: Admission) -> None:
    assert api.admitted(core_nodeclaim(requirements=[]))["spec"]["requirements"] == []


@mirrors(CLAIM_TEST, "Validation / Requirements / should fail with invalid GT or LT values")
@pytest.mark.parametrize("case", [c for c in BAD_BOUNDS if c[0] in ("Gt", "Lt")], ids=_bound_ids)
def test_claim_invalid_gt_lt(api: Admission, case: tuple[str, tuple[str, ...]]) -> None:
    api.refused(core_nodeclaim(requirements=[req(ZONE, case[0], *case[1])]))


@mirrors(CLAIM_TEST, "Validation / Requirements / should fail with invalid GTE or LTE values")
@pytest.mark.parametrize("case", [c for c in BAD_BOUNDS if c[0] in ("Gte", "Lte")], ids=_bound_ids)
def test_claim_invalid_gte_lte(api: Admission, case: tuple[str, tuple[str, ...]]) -> None:
    api.refused(core_nodeclaim(requirements=[req(ZONE, case[0], *case[1])]))


@mirrors(CLAIM_TEST, "Validation / Requirements / should error when minValues is negative")
def test_claim_negative_min_values(api: Admission) -> None:
    api.refused(core_nodeclaim(requirements=[req(INSTANCE_TYPE, "In", "t-1", minValues=-1)]))


@mirrors(CLAIM_TEST, "Validation / Requirements / should error when minValues is zero")
def test_claim_zero_min_values(api: Admission) -> None:
    api.refused(core_nodeclaim(requirements=[req(INSTANCE_TYPE, "In", "t-1", minValues=0)]))


@mirrors(CLAIM_TEST, "Validation / Requirements / should error when minValues is more than 50")
def test_claim_min_values_over_50(api: Admission) -> None:
    api.refused(core_nodeclaim(requirements=[req(INSTANCE_TYPE, "Exists", minValues=51)]))


@mirrors(
    CLAIM_TEST,
    "Validation / Requirements / should allow more than 50 values if minValues is not specified.",
)
def test_claim_many_values_without_min_values(api: Admission) -> None:
    values = [f"instance{i}" for i in range(90)]
    stored = api.admitted(core_nodeclaim(requirements=[req(INSTANCE_TYPE, "In", *values)]))
    assert stored["spec"]["requirements"][0]["values"] == values


@mirrors(
    CLAIM_TEST,
    "Validation / Requirements / should error when minValues is greater than the number of "
    "unique values specified within In operator",
)
def test_claim_min_values_over_value_count(api: Admission) -> None:
    api.refused(core_nodeclaim(requirements=[req(INSTANCE_TYPE, "In", "t-1", minValues=2)]))


@mirrors(
    CLAIM_TEST, "Validation / Requirements / should error when requirements is greater than 100"
)
def test_claim_over_100_requirements(api: Admission) -> None:
    reqs = [req(f"example.com/key-{i}", "In", f"value-{i}") for i in range(101)]
    api.refused(core_nodeclaim(requirements=reqs))


@mirrors(
    CLAIM_TEST,
    "Validation / TerminationGracePeriod / should succeed on a valid terminationGracePeriod",
)
@pytest.mark.parametrize("value", ["30s", "1h30m5s"], ids=["single unit", "multiple units"])
def test_claim_valid_termination_grace_period(api: Admission, value: str) -> None:
    stored = api.admitted(core_nodeclaim(terminationGracePeriod=value))
    assert stored["spec"]["terminationGracePeriod"] == value


@mirrors(
    CLAIM_TEST,
    "Validation / TerminationGracePeriod / should fail on an invalid terminationGracePeriod",
)
@pytest.mark.parametrize(
    "value",
    ["-1s", "1hr", "Never", "FooNever"],
    ids=["negative", "invalid unit", "never", "partial match"],
)
def test_claim_invalid_termination_grace_period(api: Admission, value: str) -> None:
    found = api.refused(core_nodeclaim(terminationGracePeriod=value))
    assert [issue.path for issue in found] == ["spec.terminationGracePeriod"]


@mirrors(CLAIM_TEST, "Validation / ExpireAfter / should succeed on a valid expireAfter")
@pytest.mark.parametrize(
    "value", ["30s", "1h30m5s", "Never"], ids=["single unit", "multiple units", "never"]
)
def test_claim_valid_expire_after(api: Admission, value: str) -> None:
    assert api.admitted(core_nodeclaim(expireAfter=value))["spec"]["expireAfter"] == value


@mirrors(CLAIM_TEST, "Validation / ExpireAfter / should fail on an invalid expireAfter")
@pytest.mark.parametrize(
    "value", ["-1s", "1hr", "FooNever"], ids=["negative", "invalid unit", "partial match"]
)
def test_claim_invalid_expire_after(api: Admission, value: str) -> None:
    found = api.refused(core_nodeclaim(expireAfter=value))
    assert [issue.path for issue in found] == ["spec.expireAfter"]
