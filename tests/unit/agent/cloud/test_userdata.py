"""User data per AMI family: what each family's bootstrap reads, and the merge of the node
class's own user data (MIME parts first, Bottlerocket TOML with our keys winning)."""

from __future__ import annotations

import email
import tomllib

import pytest

from agent.cloud.aws.userdata import ClusterInfo, NodeSettings, Taint, UserDataError, render

CLUSTER = ClusterInfo("prod-1", "https://ABC.eks.amazonaws.com", "Q0E=", "172.20.0.0/16")
NODE = NodeSettings(
    {"karpenter.sh/nodepool": "general", "team": "web"},
    [Taint("karpenter.sh/unregistered", "", "NoExecute"), Taint("dedicated", "web", "NoSchedule")],
    max_pods=58,
)


def parts(document: str) -> list[tuple[str, str]]:
    message = email.message_from_string(document)
    return [
        (p.get_content_type(), str(p.get_payload())) for p in message.walk() if not p.is_multipart()
    ]


def test_al2023_node_config_after_the_users_part() -> None:
    custom = (
        "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\n"
        "spec:\n  kubelet:\n    config:\n      shutdownGracePeriod: 30s\n"
    )
    found = parts(render("AL2023", CLUSTER, NODE, custom))
    assert [kind for kind, _ in found] == ["application/node.eks.aws"] * 2
    assert "shutdownGracePeriod" in found[0][1], "the user's config comes first; nodeadm merges"
    ours = found[1][1]
    assert "apiServerEndpoint: https://ABC.eks.amazonaws.com" in ours
    assert "cidr: 172.20.0.0/16" in ours
    assert "- 172.20.0.10" in ours
    assert "maxPods: 58" in ours
    assert "value: web" in ours
    assert "--node-labels=karpenter.sh/nodepool=general,team=web" in ours


def test_al2_bootstrap_arguments_and_a_user_script() -> None:
    found = parts(render("AL2", CLUSTER, NODE, "#!/bin/bash\necho hello"))
    assert found[0][1].startswith("#!/bin/bash\necho hello")
    script = found[1][1]
    assert (
        "/etc/eks/bootstrap.sh 'prod-1' --apiserver-endpoint 'https://ABC.eks.amazonaws.com'"
        in script
    )
    assert "--dns-cluster-ip '172.20.0.10'" in script
    assert "--use-max-pods false" in script
    assert (
        "--register-with-taints=karpenter.sh/unregistered:NoExecute,dedicated=web:NoSchedule"
        in script
    )
    assert "--max-pods=58" in script


def test_bottlerocket_toml_merges_with_our_keys_winning() -> None:
    custom = (
        '[settings.kubernetes]\ncluster-name = "wrong"\nimage-gc-high-threshold-percent = 85\n'
        "[settings.host-containers.admin]\nenabled = true\n"
    )
    settings = tomllib.loads(render("Bottlerocket", CLUSTER, NODE, custom))
    kubernetes = settings["settings"]["kubernetes"]
    assert kubernetes["cluster-name"] == "prod-1"
    assert kubernetes["image-gc-high-threshold-percent"] == 85
    assert kubernetes["max-pods"] == 58
    assert kubernetes["node-labels"]["karpenter.sh/nodepool"] == "general"
    assert kubernetes["node-taints"]["dedicated"] == ["web:NoSchedule"]
    assert settings["settings"]["host-containers"]["admin"]["enabled"] is True
    with pytest.raises(UserDataError, match=r"spec\.userData"):
        render("Bottlerocket", CLUSTER, NODE, "not = [toml")


def test_windows_powershell() -> None:
    script = render("Windows2022", CLUSTER, NODE, "<powershell>Write-Host hi</powershell>")
    assert script.startswith("<powershell>\nWrite-Host hi\n")
    assert "Start-EKSBootstrap.ps1" in script
    assert "-EKSClusterName 'prod-1'" in script
    assert "-DNSClusterIP '172.20.0.10'" in script
    assert script.rstrip().endswith("</powershell>")
