"""The CA bundle the agent hashes each EC2NodeClass with, on a real API server: what its
connection trusts (as Karpenter reads it: the CA file's bytes, base64), and the same value
``driftwave agent hash --kubeconfig`` takes from the kubeconfig."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from agent.live.build import connect
from agent.live.options import LiveOptions
from driftwave.cli import app
from tests.support.controlplane import ControlPlane

NODECLASS = {
    "apiVersion": "karpenter.k8s.aws/v1",
    "kind": "EC2NodeClass",
    "metadata": {"name": "default"},
    "spec": {
        "role": "KarpenterNodeRole",
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "prod"}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "prod"}}],
    },
}


def _ca_file(kubeconfig: Path) -> Path:
    config = yaml.safe_load(kubeconfig.read_text())
    return Path(config["clusters"][0]["cluster"]["certificate-authority"])


def test_the_connection_trusts_the_kubeconfigs_ca(controlplane: ControlPlane) -> None:
    rest = connect(LiveOptions(cluster_name="prod-1", kubeconfig=controlplane.kubeconfig))
    try:
        expected = base64.b64encode(_ca_file(controlplane.kubeconfig).read_bytes()).decode()
        assert rest.ca_bundle() == expected
    finally:
        rest.close()


def test_agent_hash_reads_the_same_bundle_from_the_kubeconfig(
    controlplane: ControlPlane, tmp_path: Path
) -> None:
    manifest = tmp_path / "class.yaml"
    manifest.write_text(yaml.safe_dump(NODECLASS))
    bundle = base64.b64encode(_ca_file(controlplane.kubeconfig).read_bytes()).decode()
    runner = CliRunner()
    via_kubeconfig = runner.invoke(
        app, ["agent", "hash", "--json", "--kubeconfig", str(controlplane.kubeconfig),
              str(manifest)],
    )  # fmt: skip
    via_bundle = runner.invoke(app, ["agent", "hash", "--json", "--ca-bundle", bundle,
                                     str(manifest)])  # fmt: skip
    assert via_kubeconfig.exit_code == via_bundle.exit_code == 0, via_kubeconfig.output
    assert json.loads(via_kubeconfig.stdout) == json.loads(via_bundle.stdout)
