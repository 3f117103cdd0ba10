"""Cluster capacity as the provisioner sees it: what bound pods use on existing nodes."""

from __future__ import annotations

from agent.api.kube import Node, Pod
from agent.catalog import Catalog
from agent.provisioning.pools import resource_order
from agent.provisioning.state import existing_capacity
from agent.scheduling.pods import shapes_of
from agent.scheduling.typetable import TypeTable


def _node() -> Node:
    return Node.model_validate(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
            "spec": {"providerID": "aws:///us-east-1a/i-1"},
            "status": {"allocatable": {"cpu": "3920m", "memory": "14Gi", "pods": "58"}},
        }
    )


def _pod(name: str, cpu: str) -> Pod:
    return Pod.model_validate(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "nodeName": "n1",
                "containers": [
                    {"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}
                ],
            },
        }
    )


def test_bound_pods_use_their_requests_in_base_units() -> None:
    catalog = Catalog.packaged()
    chosen = [catalog.get("m6i.xlarge")]
    table = TypeTable(
        chosen,
        [catalog.offerings(t) for t in chosen],
        catalog.zones,
        resources=resource_order(catalog),
    )
    pods = [_pod("a", "500m"), _pod("b", "1")]
    for shapes in (None, [ref.shape for ref in shapes_of(pods)]):
        (node,) = existing_capacity([_node()], [], pods, table, shapes=shapes)
        cpu = table.resource_index["cpu"]
        pods_at = table.resource_index["pods"]
        assert int(node.used[cpu]) == 1500  # millicores, not 1,500,000
        assert int(node.used[pods_at]) == 2
        assert int(node.allocatable[cpu]) == 3920
