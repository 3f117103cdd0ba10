"""Least privilege: SelfSubjectAccessReviews as the ServiceAccount the chart creates (a
TokenRequest token), one per row, for each driver. What the agent must be able to do is allowed;
what it must not do is refused: Secrets anywhere, making or changing pods, NodePools' spec,
RBAC escalation and binding, tokens, impersonation, namespaces, Leases outside its own, other
workloads, CRDs and webhooks; under the karpenter driver also every write of the native one but
deleting NodeClaims (a rollback deletes those that never got Ready on the image it leaves).

The rows the agent needs are the ones tests/integration/deploy/test_install.py makes as that
identity (its audit-log checks keep this table and the agent's requests the same)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from agent.kube.real.leader import LEASE_NAME
from agent.kube.real.resources import WATCHED
from agent.kube.real.rest import KubeREST
from tests.integration.deploy.world import DRIVERS, Release
from tests.support.tokens import can

OWN = "<release namespace>"
"""Stands for the release's namespace in a row."""
RBAC = "rbac.authorization.k8s.io"
LEASES = "coordination.k8s.io"


@dataclass(frozen=True)
class Row:
    """One access review: ``verb`` on ``group/resource[/subresource]`` (in ``namespace``; all
    namespaces or cluster-scoped when empty; of the object ``name`` when given)."""

    verb: str
    group: str
    resource: str
    namespace: str = ""
    name: str = ""

    def __str__(self) -> str:
        where = f" in {self.namespace}" if self.namespace else ""
        named = f" {self.name}" if self.name else ""
        return f"{self.verb} {self.group or 'core'}/{self.resource}{named}{where}"

    def allowed(self, rest: KubeREST, release: Release) -> bool:
        """The API server's answer for the client's own identity."""
        resource, _, subresource = self.resource.partition("/")
        attributes = {"group": self.group}
        if subresource:
            attributes["subresource"] = subresource
        for attribute, value in (("namespace", self.namespace), ("name", self.name)):
            if value:
                attributes[attribute] = release.namespace if value == OWN else value
        return can(rest, self.verb, resource, **attributes)


READS = [Row(verb, r.group, r.plural) for r in WATCHED for verb in ("get", "list", "watch")]
"""The informers' lists and watches, in every namespace (and reads before the first list)."""
LEADER = [
    Row("create", LEASES, "leases", OWN),
    Row("get", LEASES, "leases", OWN, LEASE_NAME),
    Row("update", LEASES, "leases", OWN, LEASE_NAME),
]
WAVE = [Row("patch", "karpenter.k8s.aws", "ec2nodeclasses")]
ROLLBACK = [Row("delete", "karpenter.sh", "nodeclaims")]
"""Under the karpenter driver: a rollback deletes the NodeClaims that never got Ready on the image
it leaves."""
NATIVE = [
    Row("create", "karpenter.sh", "nodeclaims"),
    Row("patch", "karpenter.sh", "nodeclaims"),
    Row("delete", "karpenter.sh", "nodeclaims"),
    Row("patch", "karpenter.sh", "nodeclaims/status"),
    Row("patch", "karpenter.sh", "nodepools/status"),
    Row("patch", "karpenter.k8s.aws", "ec2nodeclasses/status"),
    Row("patch", "", "nodes"),
    Row("delete", "", "nodes"),
    Row("create", "", "pods/eviction", "default"),
    Row("create", "", "pods/eviction", "kube-system"),
    Row("delete", "", "pods", "default"),
]
"""The native driver's writes: NodeClaims' lifecycle, node class and pool status, cordoning and
removing nodes, draining pods."""
NEVER = [
    # Secrets and configuration
    Row("get", "", "secrets"),
    Row("list", "", "secrets"),
    Row("watch", "", "secrets"),
    Row("get", "", "secrets", OWN, "driftwave-agent-token"),
    Row("list", "", "secrets", "kube-system"),
    Row("list", "", "configmaps"),
    # pods: the agent never makes, changes, binds or enters them
    Row("create", "", "pods"),
    Row("create", "", "pods", OWN),
    Row("update", "", "pods"),
    Row("patch", "", "pods"),
    Row("patch", "", "pods/status"),
    Row("create", "", "pods/binding"),
    Row("create", "", "pods/exec"),
    Row("create", "", "pods/portforward"),
    Row("deletecollection", "", "pods"),
    # nodes: never made, never their status (kubelets write it)
    Row("create", "", "nodes"),
    Row("update", "", "nodes"),
    Row("patch", "", "nodes/status"),
    Row("create", "", "nodes/proxy"),
    # NodePools and EC2NodeClasses are the operator's: only a wave's patch and status
    Row("create", "karpenter.sh", "nodepools"),
    Row("patch", "karpenter.sh", "nodepools"),
    Row("update", "karpenter.sh", "nodepools"),
    Row("delete", "karpenter.sh", "nodepools"),
    Row("create", "karpenter.k8s.aws", "ec2nodeclasses"),
    Row("update", "karpenter.k8s.aws", "ec2nodeclasses"),
    Row("delete", "karpenter.k8s.aws", "ec2nodeclasses"),
    Row("update", "karpenter.sh", "nodeclaims"),
    Row("deletecollection", "karpenter.sh", "nodeclaims"),
    # RBAC, tokens, impersonation
    Row("escalate", RBAC, "clusterroles"),
    Row("bind", RBAC, "clusterroles"),
    Row("patch", RBAC, "clusterroles"),
    Row("create", RBAC, "clusterrolebindings"),
    Row("patch", RBAC, "roles", OWN),
    Row("create", RBAC, "rolebindings", OWN),
    Row("create", "", "serviceaccounts/token", OWN),
    Row("create", "", "serviceaccounts/token", "kube-system"),
    Row("create", "", "serviceaccounts", OWN),
    Row("impersonate", "", "users"),
    Row("impersonate", "", "groups"),
    Row("impersonate", "", "serviceaccounts"),
    Row("create", "certificates.k8s.io", "certificatesigningrequests"),
    # namespaces
    Row("create", "", "namespaces"),
    Row("delete", "", "namespaces"),
    Row("delete", "", "namespaces", name=OWN),
    # Leases: only its own, by name, in its own namespace
    Row("create", LEASES, "leases", "kube-system"),
    Row("update", LEASES, "leases", "kube-system", "kube-controller-manager"),
    Row("get", LEASES, "leases", "default", LEASE_NAME),
    Row("update", LEASES, "leases", "default", LEASE_NAME),
    Row("update", LEASES, "leases", OWN, "another-lease"),
    Row("patch", LEASES, "leases", OWN, LEASE_NAME),
    Row("delete", LEASES, "leases", OWN, LEASE_NAME),
    Row("list", LEASES, "leases", OWN),
    # Events: the agent posts none
    Row("create", "", "events", OWN),
    Row("create", "events.k8s.io", "events", OWN),
    # workloads: read only, its own Deployment included
    Row("patch", "apps", "deployments", OWN),
    Row("update", "apps", "deployments/scale", OWN),
    Row("delete", "apps", "deployments", OWN),
    Row("patch", "apps", "deployments"),
    Row("patch", "apps", "daemonsets"),
    Row("delete", "apps", "statefulsets"),
    Row("create", "batch", "jobs"),
    Row("patch", "policy", "poddisruptionbudgets"),
    Row("delete", "policy", "poddisruptionbudgets", OWN),
    # the cluster's machinery
    Row("create", "apiextensions.k8s.io", "customresourcedefinitions"),
    Row("patch", "apiextensions.k8s.io", "customresourcedefinitions"),
    Row("delete", "apiextensions.k8s.io", "customresourcedefinitions"),
    Row("create", "admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
    Row("create", "admissionregistration.k8s.io", "validatingadmissionpolicies"),
    Row("patch", "networking.k8s.io", "networkpolicies", OWN),
    Row("create", "", "persistentvolumes"),
    Row("*", "*", "*"),
]

MAY = {
    "native": READS + LEADER + WAVE + NATIVE,
    "karpenter": READS + LEADER + WAVE + ROLLBACK,
}
MAY_NOT = {
    "native": NEVER,
    "karpenter": NEVER + [row for row in NATIVE if row not in ROLLBACK],
}


@pytest.fixture
def as_agent(release: Release) -> Iterator[KubeREST]:
    client = release.rest()
    yield client
    client.close()


def cases(table: dict[str, list[Row]]) -> list[object]:
    return [
        pytest.param(driver, row, id=f"{driver}: {row}")
        for driver in DRIVERS
        for row in table[driver]
    ]


@pytest.mark.parametrize(("release", "row"), cases(MAY), indirect=["release"])
def test_allowed(release: Release, as_agent: KubeREST, row: Row) -> None:
    assert row.allowed(as_agent, release), f"{release.user} must be able to {row}"


@pytest.mark.parametrize(("release", "row"), cases(MAY_NOT), indirect=["release"])
def test_refused(release: Release, as_agent: KubeREST, row: Row) -> None:
    assert not row.allowed(as_agent, release), f"{release.user} must not {row}"


def test_the_tables_do_not_overlap() -> None:
    for driver in DRIVERS:
        assert not set(MAY[driver]) & set(MAY_NOT[driver]), driver
