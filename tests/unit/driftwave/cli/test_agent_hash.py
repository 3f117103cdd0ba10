"""``driftwave agent hash``: the hashes Karpenter would stamp, what the objects carry, the CA
bundle's sources, and bad input (exit 1, the field and the rule named, nothing printed on stdout
but the error)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodepool import NodePool
from agent.hashing.stamps import nodeclass_hash, nodepool_hash
from common.kubemodel import parse_manifest
from driftwave.cli import app

runner = CliRunner()
POOL: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "general"},
    "spec": {
        "template": {
            "metadata": {"labels": {"team": "payments"}},
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                 "name": "default"},
                "requirements": [{"key": "kubernetes.io/arch", "operator": "In",
                                  "values": ["amd64"]}],
            },
        }
    },
}  # fmt: skip
NODECLASS: dict[str, Any] = {
    "apiVersion": "karpenter.k8s.aws/v1",
    "kind": "EC2NodeClass",
    "metadata": {"name": "default"},
    "spec": {
        "role": "KarpenterNodeRole",
        "amiSelectorTerms": [{"alias": "al2023@v20251209"}],
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "prod"}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "prod"}}],
    },
}


def _write(path: Path, *docs: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump_all(docs))
    return path


def _plain(output: str) -> str:
    """The output's words, without the box a usage error is drawn in."""
    return " ".join(output.replace("\u2502", " ").split())


def _annotated(doc: dict[str, Any], annotations: dict[str, str]) -> dict[str, Any]:
    return {**doc, "metadata": {**doc["metadata"], "annotations": annotations}}


def test_json_lists_each_objects_hash_and_version(tmp_path: Path) -> None:
    manifests = _write(tmp_path / "objects.yaml", POOL, NODECLASS)
    result = runner.invoke(app, ["agent", "hash", "--json", "--ca-bundle", "Q0E=", str(manifests)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == [
        {"kind": "NodePool", "name": "general",
         "hash": nodepool_hash(parse_manifest(NodePool, POOL)), "hashVersion": "v3"},
        {"kind": "EC2NodeClass", "name": "default",
         "hash": nodeclass_hash(parse_manifest(EC2NodeClass, NODECLASS), "Q0E="),
         "hashVersion": "v5"},
    ]  # fmt: skip


def test_each_row_says_whether_karpenters_stamp_agrees(tmp_path: Path) -> None:
    ours = nodepool_hash(parse_manifest(NodePool, POOL))
    agreeing = _annotated(POOL, {"karpenter.sh/nodepool-hash": ours,
                                 "karpenter.sh/nodepool-hash-version": "v3"})  # fmt: skip
    differing = _annotated(POOL, {"karpenter.sh/nodepool-hash": "1",
                                  "karpenter.sh/nodepool-hash-version": "v3"})  # fmt: skip
    differing["metadata"]["name"] = "other"
    older = _annotated(POOL, {"karpenter.sh/nodepool-hash": "1",
                              "karpenter.sh/nodepool-hash-version": "v2"})  # fmt: skip
    older["metadata"]["name"] = "older"
    manifests = _write(tmp_path / "pools.yaml", agreeing, differing, older)
    result = runner.invoke(app, ["agent", "hash", str(manifests)])
    assert result.exit_code == 0, result.output
    rows = {line.split()[1]: line.split()[-1] for line in result.stdout.splitlines()[1:4]}
    assert rows == {"NodePool/general": "agrees", "NodePool/other": "differs",
                    "NodePool/older": "version"}  # fmt: skip
    assert "1 object(s) carry another hash of the same version" in result.stdout


def test_the_ca_bundle_comes_from_a_kubeconfig_or_a_ca_file(tmp_path: Path) -> None:
    pem = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    (tmp_path / "ca.crt").write_bytes(pem)
    encoded = base64.b64encode(pem).decode()
    kubeconfig = {
        "apiVersion": "v1", "kind": "Config", "current-context": "prod",
        "contexts": [{"name": "prod", "context": {"cluster": "prod-1", "user": "u"}},
                     {"name": "dev", "context": {"cluster": "dev-1", "user": "u"}}],
        "clusters": [{"name": "prod-1", "cluster": {"server": "https://a",
                                                    "certificate-authority-data": encoded}},
                     {"name": "dev-1", "cluster": {"server": "https://b",
                                                   "certificate-authority": "ca.crt"}}],
    }  # fmt: skip
    (tmp_path / "config").write_text(yaml.safe_dump(kubeconfig))
    manifests = _write(tmp_path / "class.yaml", NODECLASS)
    expected = nodeclass_hash(parse_manifest(EC2NodeClass, NODECLASS), encoded)
    for options in (
        ["--kubeconfig", str(tmp_path / "config")],
        ["--kubeconfig", str(tmp_path / "config"), "--context", "dev"],
        ["--ca-file", str(tmp_path / "ca.crt")],
        ["--ca-bundle", encoded],
    ):
        result = runner.invoke(app, ["agent", "hash", "--json", *options, str(manifests)])
        assert result.exit_code == 0, (options, result.output)
        assert json.loads(result.stdout)[0]["hash"] == expected, options
    without = runner.invoke(app, ["agent", "hash", "--json", str(manifests)])
    assert json.loads(without.stdout)[0]["hash"] != expected


def test_an_invalid_manifest_is_an_error_naming_the_field(tmp_path: Path) -> None:
    broken = {**POOL, "spec": {**POOL["spec"], "weight": 1000}}
    manifests = _write(tmp_path / "pool.yaml", broken)
    result = runner.invoke(app, ["agent", "hash", str(manifests)])
    assert result.exit_code == 1
    assert "spec.weight" in result.stderr
    assert result.stdout == ""


def test_bad_options_are_errors(tmp_path: Path) -> None:
    manifests = _write(tmp_path / "pool.yaml", POOL)
    both = runner.invoke(app, ["agent", "hash", "--ca-bundle", "x", "--ca-file",
                               str(manifests), str(manifests)])  # fmt: skip
    assert both.exit_code == 1
    assert "one source of the CA bundle" in _plain(both.output)
    lone = runner.invoke(app, ["agent", "hash", "--context", "dev", str(manifests)])
    assert lone.exit_code == 1
    assert "--context: only with --kubeconfig" in _plain(lone.output)
    (tmp_path / "config").write_text("current-context: nowhere\n")
    missing = runner.invoke(app, ["agent", "hash", "--kubeconfig", str(tmp_path / "config"),
                                  str(manifests)])  # fmt: skip
    assert missing.exit_code == 1
    assert "no context named 'nowhere'" in missing.stderr
    other = _write(tmp_path / "cm.yaml", {"apiVersion": "v1", "kind": "ConfigMap",
                                          "metadata": {"name": "x"}})  # fmt: skip
    nothing = runner.invoke(app, ["agent", "hash", str(other)])
    assert nothing.exit_code == 1
    assert "no NodePool or EC2NodeClass" in nothing.stderr


def test_a_ca_bundle_must_be_base64(tmp_path: Path) -> None:
    manifests = _write(tmp_path / "class.yaml", NODECLASS)
    result = runner.invoke(app, ["agent", "hash", "--ca-bundle", "not base64!!", str(manifests)])
    assert result.exit_code == 1
    assert "is not base64" in _plain(result.output)
    (tmp_path / "two.yaml").write_text("a: 1\n---\nb: 2\n")
    several = runner.invoke(app, ["agent", "hash", "--kubeconfig", str(tmp_path / "two.yaml"),
                                  str(manifests)])  # fmt: skip
    assert several.exit_code == 1
    assert "several YAML documents" in several.stderr
