"""The live cluster keeps the forms of objects as read (to patch only what the agent changed)
for the kinds it updates, not for the kinds it only reads: listing a cluster's pods at every
step, as the controllers do, holds no old version of any pod beside the cache's."""

from __future__ import annotations

from typing import Any

from agent.api.kube import Node, Pod
from agent.kube.real.cluster import KubeCluster
from tests.support.kubeobjects import node, pod


class Listing:
    """A REST client answering every LIST with the objects of its path at the version the test
    set (a stand-in: what is measured is what the adapter keeps, not the API server)."""

    def __init__(self) -> None:
        self.version = 1

    def request(self, method: str, path: str, **_: Any) -> dict[str, Any]:
        assert method == "GET"
        if path == "/api/v1/nodes":
            made = [node(f"node-{i}") for i in range(3)]
        else:
            made = [pod(f"web-{i}", "default", {"app": "web"}) for i in range(5)]
        for item in made:
            item["metadata"]["resourceVersion"] = str(self.version)
        return {"items": made}


def test_only_the_read_forms_of_updated_kinds_are_kept() -> None:
    rest = Listing()
    cluster = KubeCluster(rest, resources=())  # type: ignore[arg-type]  # lists go to the stand-in
    for version in range(1, 7):
        rest.version = version
        assert len(cluster.list(Pod)) == 5
        assert len(cluster.list(Node)) == 3
    # three nodes, each in its last four versions as read; no pod
    assert cluster.read_forms() == 3 * 4
