"""Round trips: a valid manifest parsed with ``parse_manifest`` dumps back to exactly the input
with ``to_manifest()``; ``to_full_manifest()`` adds the defaults and is stable when parsed again."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.kinds import KARPENTER_KINDS
from agent.api.nodeclaim import NodeClaim
from agent.api.nodepool import NodePool
from common.documents import Document, load_documents
from common.kubemodel import KubeModel, parse_manifest

from .helpers import accepted, ec2nodeclass, nodeclaim, nodepool

EXAMPLES = Path(__file__).resolve().parents[4] / "agent" / "examples" / "v1"


def karpenter_documents() -> list[Document]:
    docs: list[Document] = []
    for path in sorted(EXAMPLES.glob("*.yaml")):
        for doc in load_documents(path.read_text(encoding="utf-8"), path.name):
            key = (str(doc.data.get("apiVersion")), doc.kind)
            if key in KARPENTER_KINDS:
                docs.append(doc)
    return docs


DOCUMENTS = karpenter_documents()


def model_of(doc: Document) -> type[KubeModel]:
    return KARPENTER_KINDS[(str(doc.data["apiVersion"]), doc.kind)]


def test_the_examples_hold_nodepools_and_nodeclasses() -> None:
    kinds = [doc.kind for doc in DOCUMENTS]
    assert kinds.count("NodePool") >= 4
    assert kinds.count("EC2NodeClass") >= 4


@pytest.mark.parametrize(
    "doc", DOCUMENTS, ids=[f"{d.source}:{d.index}:{d.kind}" for d in DOCUMENTS]
)
def test_every_example_validates_and_round_trips(doc: Document) -> None:
    parsed = accepted(model_of(doc), copy.deepcopy(doc.data))
    full = parsed.to_full_manifest()
    assert parse_manifest(model_of(doc), full).to_full_manifest() == full


def test_an_example_nodeclass_gets_the_metadata_option_defaults_it_leaves_out() -> None:
    (doc,) = [
        d for d in DOCUMENTS if d.source == "seed-003-after.yaml" and d.kind == "EC2NodeClass"
    ]
    assert doc.data["spec"]["metadataOptions"] == {
        "httpEndpoint": "enabled",
        "httpPutResponseHopLimit": 2,
    }
    full = parse_manifest(EC2NodeClass, doc.data).to_full_manifest()
    assert full["spec"]["metadataOptions"] == {
        "httpEndpoint": "enabled",
        "httpProtocolIPv6": "disabled",
        "httpPutResponseHopLimit": 2,
        "httpTokens": "required",
    }


# --- the full manifests of minimal objects ---------------------------------------------------

EMPTY_META: dict[str, Any] = {
    "labels": {},
    "annotations": {},
    "ownerReferences": [],
    "finalizers": [],
}


def test_full_manifest_of_a_minimal_nodepool() -> None:
    assert accepted(NodePool, nodepool()).to_full_manifest() == {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "default", **EMPTY_META},
        "spec": {
            "template": {
                "metadata": {},
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": "default",
                    },
                    "requirements": [
                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}
                    ],
                    "expireAfter": "720h",
                },
            },
            "disruption": {
                "consolidationPolicy": "WhenEmptyOrUnderutilized",
                "consolidateAfter": "0s",
                "budgets": [{"nodes": "10%"}],
            },
        },
    }


def test_full_manifest_of_a_minimal_nodeclass() -> None:
    full = accepted(EC2NodeClass, ec2nodeclass()).to_full_manifest()
    assert full == {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default", **EMPTY_META},
        "spec": {
            **ec2nodeclass()["spec"],
            "metadataOptions": {
                "httpEndpoint": "enabled",
                "httpProtocolIPv6": "disabled",
                "httpPutResponseHopLimit": 1,
                "httpTokens": "required",
            },
        },
    }


def test_full_manifest_of_a_minimal_nodeclaim() -> None:
    full = accepted(NodeClaim, nodeclaim()).to_full_manifest()
    assert full["spec"]["expireAfter"] == "720h"
    assert full["status"] == {"capacity": {}, "allocatable": {}, "conditions": []}


# --- objects with every field set ------------------------------------------------------------

FULL_META: dict[str, Any] = {
    "name": "default",
    "labels": {"team": "platform"},
    "annotations": {"example.com/owner": "platform"},
    "ownerReferences": [],
    "finalizers": ["karpenter.sh/termination"],
    "uid": "0f0e0d0c-0000-1111-2222-333344445555",
    "resourceVersion": "42",
    "generation": 3,
    "creationTimestamp": "2024-08-07T10:00:00Z",
}
CONDITION = {
    "type": "Ready",
    "status": "True",
    "reason": "Ready",
    "message": "",
    "lastTransitionTime": "2024-08-07T10:00:00Z",
    "observedGeneration": 3,
}

EVERY_NODEPOOL_FIELD: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": FULL_META,
    "spec": {
        "template": {
            "metadata": {"labels": {"team": "apps"}, "annotations": {"example.com/a": "b"}},
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.k8s.aws",
                    "kind": "EC2NodeClass",
                    "name": "default",
                },
                "requirements": [
                    {
                        "key": "karpenter.sh/capacity-type",
                        "operator": "In",
                        "values": ["spot", "on-demand"],
                        "minValues": 1,
                    },
                    {
                        "key": "karpenter.k8s.aws/instance-generation",
                        "operator": "Gt",
                        "values": ["2"],
                    },
                    {"key": "example.com/gpu", "operator": "DoesNotExist"},
                ],
                "taints": [
                    {
                        "key": "dedicated",
                        "value": "apps",
                        "effect": "NoSchedule",
                        "timeAdded": "2024-08-07T10:00:00Z",
                    }
                ],
                "startupTaints": [{"key": "node.cilium.io/agent-not-ready", "effect": "NoExecute"}],
                "expireAfter": "336h",
                "terminationGracePeriod": "24h",
            },
        },
        "disruption": {
            "consolidationPolicy": "WhenEmpty",
            "consolidateAfter": "5m",
            "budgets": [
                {"nodes": "20%", "reasons": ["Empty", "Drifted"]},
                {"nodes": "0", "schedule": "0 9 * * 1-5", "duration": "8h"},
            ],
        },
        "limits": {"cpu": "1000", "memory": "1000Gi", "nvidia.com/gpu": 8},
        "weight": 50,
    },
    "status": {
        "conditions": [CONDITION],
        "nodeClassObservedGeneration": 2,
        "nodes": 4,
        "resources": {"cpu": "16", "memory": "64Gi", "nodes": "4"},
    },
}

EVERY_NODECLASS_FIELD: dict[str, Any] = {
    "apiVersion": "karpenter.k8s.aws/v1",
    "kind": "EC2NodeClass",
    "metadata": FULL_META,
    "spec": {
        "amiFamily": "AL2023",
        "amiSelectorTerms": [
            {"id": "ami-0123456789abcdef0"},
            {"name": "my-ami-*", "owner": "self"},
            {"tags": {"team": "platform"}, "owner": "123456789012"},
            {"ssmParameter": "/my/ami"},
        ],
        "subnetSelectorTerms": [
            {"id": "subnet-0abc"},
            {"tags": {"karpenter.sh/discovery": "demo"}},
        ],
        "securityGroupSelectorTerms": [
            {"id": "sg-0abc"},
            {"name": "eks-cluster-sg"},
            {"tags": {"a": "b"}},
        ],
        "capacityReservationSelectorTerms": [
            {"id": "cr-0abc"},
            {"tags": {"team": "ml"}, "ownerID": "123456789012"},
        ],
        "associatePublicIPAddress": False,
        "role": "KarpenterNodeRole-demo",
        "tags": {"Name": "demo-node", "team": "platform"},
        "kubelet": {
            "clusterDNS": ["10.100.0.10"],
            "maxPods": 110,
            "podsPerCore": 10,
            "systemReserved": {"cpu": "100m", "memory": "100Mi"},
            "kubeReserved": {"cpu": "200m", "ephemeral-storage": "1Gi"},
            "evictionHard": {"memory.available": "5%"},
            "evictionSoft": {"memory.available": "10%"},
            "evictionSoftGracePeriod": {"memory.available": "1m"},
            "evictionMaxPodGracePeriod": 60,
            "imageGCHighThresholdPercent": 85,
            "imageGCLowThresholdPercent": 80,
            "cpuCFSQuota": True,
        },
        "blockDeviceMappings": [
            {
                "deviceName": "/dev/xvda",
                "rootVolume": True,
                "ebs": {
                    "volumeSize": "100Gi",
                    "volumeType": "gp3",
                    "iops": 3000,
                    "throughput": 125,
                    "encrypted": True,
                    "kmsKeyID": "arn:aws:kms:us-east-1:123456789012:key/abcd",
                    "deleteOnTermination": True,
                    "snapshotID": "snap-0abc",
                    "volumeInitializationRate": 200,
                },
            }
        ],
        "instanceStorePolicy": "RAID0",
        "detailedMonitoring": True,
        "metadataOptions": {
            "httpEndpoint": "enabled",
            "httpProtocolIPv6": "enabled",
            "httpPutResponseHopLimit": 2,
            "httpTokens": "required",
        },
        "userData": "#!/bin/bash\necho hello\n",
        "context": "arn:aws:ec2:us-east-1:123456789012:launch-template/lt-0abc",
        "ipPrefixCount": 1,
        "connectionTracking": {
            "tcpEstablishedTimeout": 3600,
            "udpStreamTimeout": 120,
            "udpTimeout": 30,
        },
        "cpuOptions": {"nestedVirtualization": "disabled"},
        "networkInterfaces": [
            {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
            {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"},
        ],
        "placementGroupSelector": {"name": "demo-pg"},
    },
    "status": {
        "amis": [
            {"id": "ami-0123456789abcdef0", "name": "x", "deprecated": False, "requirements": []}
        ],
        "subnets": [{"id": "subnet-0abc", "zone": "us-east-1a", "zoneID": "use1-az1"}],
        "securityGroups": [{"id": "sg-0abc", "name": "eks-cluster-sg"}],
        "capacityReservations": [
            {
                "availabilityZone": "us-east-1a",
                "id": "cr-0abc",
                "instanceMatchCriteria": "targeted",
                "instanceType": "p5.48xlarge",
                "ownerID": "123456789012",
                "endTime": "2025-01-01T00:00:00Z",
                "interruptible": False,
                "reservationType": "capacity-block",
                "state": "active",
            }
        ],
        "instanceProfile": "demo_1234567890",
        "conditions": [CONDITION],
    },
}

EVERY_NODECLAIM_FIELD: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodeClaim",
    "metadata": {**FULL_META, "name": "default-x7k2p"},
    "spec": {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
        "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}],
        "resources": {"requests": {"cpu": "1150m", "pods": "5"}},
        "taints": [{"key": "dedicated", "effect": "NoSchedule"}],
        "startupTaints": [{"key": "node.cilium.io/agent-not-ready", "effect": "NoExecute"}],
        "expireAfter": "720h",
        "terminationGracePeriod": "48h",
    },
    "status": {
        "providerID": "aws:///us-west-2b/i-0123456789abcdef0",
        "nodeName": "ip-192-168-40-30.us-west-2.compute.internal",
        "imageID": "ami-0123456789abcdef0",
        "capacity": {"cpu": "2", "memory": "7910Mi"},
        "allocatable": {"cpu": "1930m", "memory": "6903Mi"},
        "conditions": [CONDITION],
        "lastPodEventTime": "2024-08-07T10:01:00Z",
    },
}

EVERYTHING = [
    (NodePool, EVERY_NODEPOOL_FIELD),
    (EC2NodeClass, EVERY_NODECLASS_FIELD),
    (NodeClaim, EVERY_NODECLAIM_FIELD),
]


@pytest.mark.parametrize(
    ("model", "data"), EVERYTHING, ids=["NodePool", "EC2NodeClass", "NodeClaim"]
)
def test_every_field_round_trips_and_needs_no_defaults(
    model: type[KubeModel], data: dict[str, Any]
) -> None:
    parsed = accepted(model, copy.deepcopy(data))
    assert parsed.to_full_manifest() == data


@pytest.mark.parametrize(
    ("model", "data"), EVERYTHING, ids=["NodePool", "EC2NodeClass", "NodeClaim"]
)
def test_round_trip_through_json(model: type[KubeModel], data: dict[str, Any]) -> None:
    text = json.dumps(parse_manifest(model, data).to_manifest())
    assert parse_manifest(model, json.loads(text)).to_manifest() == data


def test_to_manifest_leaves_out_what_was_not_written() -> None:
    parsed = accepted(NodePool, nodepool())
    assert "disruption" not in parsed.to_manifest()["spec"]
    assert "disruption" in parsed.to_full_manifest()["spec"]


def test_explicit_defaults_are_kept_when_written() -> None:
    data = nodepool(disruption={"consolidateAfter": "0s", "budgets": [{"nodes": "10%"}]})
    assert accepted(NodePool, data).to_manifest()["spec"]["disruption"] == {
        "consolidateAfter": "0s",
        "budgets": [{"nodes": "10%"}],
    }


# --- generated NodePools ---------------------------------------------------------------------

label_values = st.from_regex(r"\A[a-z0-9]([-a-z0-9.]{0,10}[a-z0-9])?\Z")
requirements = st.one_of(
    st.builds(
        lambda key, values, min_values: {
            "key": key,
            "operator": "In",
            "values": values,
            **({"minValues": min_values} if min_values and min_values <= len(values) else {}),
        },
        st.sampled_from(
            ["kubernetes.io/arch", "node.kubernetes.io/instance-type", "example.com/team"]
        ),
        st.lists(label_values, min_size=1, max_size=5),
        st.one_of(st.none(), st.integers(min_value=1, max_value=5)),
    ),
    st.builds(
        lambda key, op: {"key": key, "operator": op},
        st.sampled_from(["example.com/team", "topology.kubernetes.io/zone"]),
        st.sampled_from(["Exists", "DoesNotExist"]),
    ),
    st.builds(
        lambda op, n: {"key": "karpenter.k8s.aws/instance-cpu", "operator": op, "values": [str(n)]},
        st.sampled_from(["Gt", "Lt", "Gte", "Lte"]),
        st.integers(min_value=0, max_value=512),
    ),
)
durations = st.lists(
    st.tuples(st.integers(min_value=0, max_value=999), st.sampled_from("smh")),
    min_size=1,
    max_size=3,
).map(lambda parts: "".join(f"{n}{u}" for n, u in parts))
budgets = st.one_of(
    st.builds(
        lambda n: {"nodes": n},
        st.one_of(st.integers(0, 100).map(lambda n: f"{n}%"), st.integers(0, 999).map(str)),
    ),
    st.builds(
        lambda n, schedule, duration, reasons: {
            "nodes": n,
            "schedule": schedule,
            "duration": duration,
            **({"reasons": reasons} if reasons else {}),
        },
        st.integers(0, 10).map(str),
        st.sampled_from(["@daily", "@hourly", "0 9 * * 1-5", "*/5 * * * *"]),
        st.sampled_from(["8h", "30m", "1h30m", "10h0s"]),
        st.lists(st.sampled_from(["Underutilized", "Empty", "Drifted"]), unique=True),
    ),
)


@settings(max_examples=60, deadline=None)
@given(
    reqs=st.lists(requirements, min_size=1, max_size=6),
    disruption=st.fixed_dictionaries(
        {},
        optional={
            "consolidationPolicy": st.sampled_from(
                ["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"]
            ),
            "consolidateAfter": st.one_of(st.just("Never"), durations),
            "budgets": st.lists(budgets, max_size=4),
        },
    ),
    expire=st.one_of(st.none(), st.just("Never"), durations),
    weight=st.one_of(st.none(), st.integers(1, 100)),
    labels=st.dictionaries(
        st.sampled_from(["team", "example.com/env", "tier"]), label_values, max_size=3
    ),
)
def test_generated_nodepools_round_trip(
    reqs: list[dict[str, Any]],
    disruption: dict[str, Any],
    expire: str | None,
    weight: int | None,
    labels: dict[str, str],
) -> None:
    data = nodepool(disruption=disruption)
    data["spec"]["template"]["spec"]["requirements"] = reqs
    if expire is not None:
        data["spec"]["template"]["spec"]["expireAfter"] = expire
    if weight is not None:
        data["spec"]["weight"] = weight
    if labels:
        data["spec"]["template"]["metadata"] = {"labels": labels}
    parsed = accepted(NodePool, data)
    full = parsed.to_full_manifest()
    assert parse_manifest(NodePool, full).to_full_manifest() == full
    assert full["spec"]["template"]["spec"]["expireAfter"] == (expire or "720h")
