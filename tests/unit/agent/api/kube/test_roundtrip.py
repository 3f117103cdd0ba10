"""Realistic manifests parse, keep every value as written, and dump back to the same document."""

from __future__ import annotations

import pytest

from agent.api.kube import (
    KUBE_KINDS,
    DaemonSet,
    Deployment,
    Job,
    Node,
    Pod,
    PodDisruptionBudget,
    StatefulSet,
    parse_object,
)
from common.kubemodel import parse_manifest

from .manifests import (
    ALL,
    DAEMON_SET,
    INFLATE,
    JOB,
    KARPENTER_NODE,
    KIND_NODE,
    PDB,
    RUNNING_POD,
    STATEFUL_SET,
    WEB_DEPLOYMENT,
    load,
)


@pytest.mark.parametrize("name", sorted(ALL))
def test_a_manifest_dumps_back_to_exactly_the_input(name: str) -> None:
    data = load(ALL[name])
    model = KUBE_KINDS[(data["apiVersion"], data["kind"])]
    parsed = parse_manifest(model, data)
    assert parsed.to_manifest() == data
    assert parse_object(data).to_manifest() == data


@pytest.mark.parametrize("name", sorted(ALL))
def test_a_dumped_manifest_parses_to_an_equal_model(name: str) -> None:
    parsed = parse_object(load(ALL[name]))
    assert parse_object(parsed.to_manifest()) == parsed


def test_inflate_reads_its_requests_limits_and_node_selector() -> None:
    inflate = parse_manifest(Deployment, load(INFLATE))
    assert inflate.spec.replicas == 0
    spec = inflate.spec.template.spec
    app = spec.containers[0]
    assert app.image == "public.ecr.aws/eks-distro/kubernetes/pause:3.7"
    assert app.resources.requests == {"cpu": 1, "memory": "128Mi"}
    assert app.resources.limits == {"memory": "128Mi"}
    assert spec.node_selector == {"karpenter.sh/capacity-type": "spot"}
    assert spec.termination_grace_period_seconds == 0


def test_the_web_deployment_reads_its_scheduling_constraints() -> None:
    web = parse_manifest(Deployment, load(WEB_DEPLOYMENT))
    spec = web.spec.template.spec
    assert [c.name for c in spec.sidecar_containers] == ["log-shipper"]
    assert [(t.topology_key, t.min_domains) for t in spec.topology_spread_constraints] == [
        ("topology.kubernetes.io/zone", 3),
        ("kubernetes.io/hostname", None),
    ]
    assert spec.affinity is not None
    assert spec.affinity.node_affinity is not None
    required = spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution
    assert required is not None
    assert required.node_selector_terms[0].match_expressions[1].operator == "Gt"
    assert spec.tolerations[0].value == "shop"
    assert web.metadata.creation_timestamp == "2025-04-28T09:12:44Z"
    assert web.spec.template.metadata.creation_timestamp is None


def test_the_running_pod_reads_its_status() -> None:
    pod = parse_manifest(Pod, load(RUNNING_POD))
    assert pod.status is not None
    assert pod.status.phase == "Running"
    assert pod.status.host_ips[0].ip == "10.0.1.2"
    assert [c.type for c in pod.status.conditions][-1] == "PodScheduled"
    assert pod.spec.tolerations[0].toleration_seconds == 300
    assert pod.metadata.owner_references[0].kind == "ReplicaSet"


def test_the_stateful_set_keeps_its_claim_templates() -> None:
    sts = parse_manifest(StatefulSet, load(STATEFUL_SET))
    templates = sts.spec.volume_claim_templates
    assert isinstance(templates, list)
    assert templates[0]["spec"]["resources"] == {"requests": {"storage": "50Gi"}}
    assert sts.spec.template.spec.containers[0].resources.requests["ephemeral-storage"] == "1Gi"


def test_the_daemon_set_tolerates_everything() -> None:
    ds = parse_manifest(DaemonSet, load(DAEMON_SET))
    toleration = ds.spec.template.spec.tolerations[0]
    assert (toleration.key, toleration.operator) == (None, "Exists")
    assert ds.spec.template.spec.host_pid is True


def test_the_job_requests_a_gpu() -> None:
    job = parse_manifest(Job, load(JOB))
    assert job.spec.template.spec.containers[0].resources.limits["nvidia.com/gpu"] == 1
    assert job.spec.selector is not None
    assert job.status == load(JOB)["status"]


def test_the_budget_keeps_min_available_as_an_integer() -> None:
    pdb = parse_manifest(PodDisruptionBudget, load(PDB))
    assert pdb.spec.min_available == 2
    assert pdb.status is not None
    assert pdb.status.disruptions_allowed == 1


def test_the_karpenter_node_reads_its_provider_id_taint_and_status() -> None:
    node = parse_manifest(Node, load(KARPENTER_NODE))
    assert node.spec.provider_id == "aws:///us-west-2a/i-0123456789abcdef0"
    assert node.spec.taints[0].key == "karpenter.sh/disrupted"
    assert node.status is not None
    assert node.status.allocatable["memory"] == "7291520Ki"
    assert [c.type for c in node.status.conditions if c.status == "True"] == ["Ready"]
    assert node.status.node_info is not None
    assert node.status.node_info.os_image == "Amazon Linux 2023.7.20250512"
    assert node.status.node_info.kube_proxy_version == ""


def test_the_kind_node_reads_its_pod_cidrs() -> None:
    node = parse_manifest(Node, load(KIND_NODE))
    assert node.spec.pod_cidr == "10.244.0.0/24"
    assert node.spec.pod_cidrs == ["10.244.0.0/24", "fd00:10:244::/64"]
    assert node.status is not None
    assert node.status.phase == "Running"
