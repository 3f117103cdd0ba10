"""User data for each AMI family, as Karpenter's AWS provider generates it.

Every family passes the cluster's endpoint, CA and DNS address, the node's labels and taints
(registered with the node, so pods never land before the agent initializes it) and, when the
EC2NodeClass sets ``kubelet.maxPods``, the pod limit:

* **AL2023**: a MIME multi-part document whose ``application/node.eks.aws`` part is a nodeadm
  ``NodeConfig`` (``node.eks.aws/v1alpha1``); the node class's ``userData`` (a NodeConfig, a shell
  script or a MIME document) comes first, so nodeadm merges Karpenter's settings over it.
* **AL2**: a MIME multi-part document whose shell part runs ``/etc/eks/bootstrap.sh`` with
  ``--kubelet-extra-args``; the node class's script runs first.
* **Bottlerocket**: TOML settings (``settings.kubernetes.*``); the node class's TOML is merged,
  with Karpenter's keys winning.
* **Windows**: a ``<powershell>`` block running ``Start-EKSBootstrap.ps1``; the node class's
  script runs first.
"""

from __future__ import annotations

import base64
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

BOUNDARY = "//"
WINDOWS_BOOTSTRAP = "$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1"


class UserDataError(ValueError):
    """The node class's ``userData`` cannot be merged (Bottlerocket TOML that does not parse)."""


@dataclass(frozen=True)
class ClusterInfo:
    """What a node needs to join the cluster (from EKS DescribeCluster)."""

    name: str
    endpoint: str
    certificate_authority: str
    service_cidr: str = "10.100.0.0/16"

    @property
    def dns_ip(self) -> str:
        """The cluster DNS address: the service CIDR's ``.10``."""
        base = self.service_cidr.split("/")[0].rsplit(".", 1)[0]
        return f"{base}.10"


@dataclass(frozen=True)
class Taint:
    """A taint to register the node with."""

    key: str
    value: str
    effect: str

    def __str__(self) -> str:
        return (
            f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"
        )


@dataclass(frozen=True)
class NodeSettings:
    """The node's registration settings: labels, taints, max pods."""

    labels: Mapping[str, str]
    taints: Sequence[Taint]
    max_pods: int | None = None


def render(family: str, cluster: ClusterInfo, node: NodeSettings, custom: str | None) -> str:
    """The user data for ``family`` (AL2, AL2023, Bottlerocket, Windows*; Custom: as given)."""
    if family == "AL2023":
        return _al2023(cluster, node, custom)
    if family == "AL2":
        return _al2(cluster, node, custom)
    if family == "Bottlerocket":
        return _bottlerocket(cluster, node, custom)
    if family.startswith("Windows"):
        return _windows(cluster, node, custom)
    return custom or ""


def encoded(text: str) -> str:
    """Base64, as EC2 takes user data."""
    return base64.b64encode(text.encode()).decode()


def _labels_flag(node: NodeSettings) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(node.labels.items()))


def _mime(parts: Sequence[tuple[str, str]]) -> str:
    lines = ["MIME-Version: 1.0", f'Content-Type: multipart/mixed; boundary="{BOUNDARY}"', ""]
    for content_type, body in parts:
        lines += [f"--{BOUNDARY}", f"Content-Type: {content_type}", "", body.rstrip("\n")]
    lines.append(f"--{BOUNDARY}--")
    return "\n".join(lines) + "\n"


def _custom_parts(custom: str | None) -> list[tuple[str, str]]:
    """The node class's user data as MIME parts (a MIME document keeps its own parts)."""
    if not custom:
        return []
    if custom.startswith("MIME-Version"):
        header, _, body = custom.partition("\n\n")
        marker = header.split('boundary="', 1)[-1].split('"', 1)[0]
        parts = []
        for chunk in body.split(f"--{marker}")[1:]:
            chunk = chunk.strip("\n")
            if not chunk or chunk.startswith("--"):
                continue
            head, _, content = chunk.partition("\n\n")
            kind = next(
                (line.split(":", 1)[1].strip() for line in head.splitlines()
                 if line.lower().startswith("content-type:")),
                "text/x-shellscript",
            )  # fmt: skip
            parts.append((kind, content))
        return parts
    if custom.lstrip().startswith("apiVersion: node.eks.aws"):
        return [("application/node.eks.aws", custom)]
    return [('text/x-shellscript; charset="us-ascii"', custom)]


def _al2023(cluster: ClusterInfo, node: NodeSettings, custom: str | None) -> str:
    config: list[str] = [
        "apiVersion: node.eks.aws/v1alpha1",
        "kind: NodeConfig",
        "spec:",
        "  cluster:",
        f"    name: {cluster.name}",
        f"    apiServerEndpoint: {cluster.endpoint}",
        f"    certificateAuthority: {cluster.certificate_authority}",
        f"    cidr: {cluster.service_cidr}",
        "  kubelet:",
        "    config:",
        "      clusterDNS:",
        f"      - {cluster.dns_ip}",
    ]
    if node.max_pods is not None:
        config.append(f"      maxPods: {node.max_pods}")
    if node.taints:
        config.append("      registerWithTaints:")
        for taint in node.taints:
            config += [f"      - key: {taint.key}", f"        effect: {taint.effect}"]
            if taint.value:
                config.append(f"        value: {taint.value}")
    config += ["    flags:", f"    - --node-labels={_labels_flag(node)}"]
    return _mime([*_custom_parts(custom), ("application/node.eks.aws", "\n".join(config))])


def _al2(cluster: ClusterInfo, node: NodeSettings, custom: str | None) -> str:
    extra = [f"--node-labels={_labels_flag(node)}"]
    if node.taints:
        extra.append(f"--register-with-taints={','.join(map(str, node.taints))}")
    if node.max_pods is not None:
        extra.append(f"--max-pods={node.max_pods}")
    script = "\n".join(
        [
            "#!/bin/bash -xe",
            "exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1",
            f"/etc/eks/bootstrap.sh '{cluster.name}' --apiserver-endpoint '{cluster.endpoint}' "
            f"--b64-cluster-ca '{cluster.certificate_authority}' \\",
            f"--dns-cluster-ip '{cluster.dns_ip}' \\",
            *(["--use-max-pods false \\"] if node.max_pods is not None else []),
            f"--kubelet-extra-args '{' '.join(extra)}'",
        ]
    )
    return _mime([*_custom_parts(custom), ('text/x-shellscript; charset="us-ascii"', script)])


def _bottlerocket(cluster: ClusterInfo, node: NodeSettings, custom: str | None) -> str:
    try:
        settings: dict[str, Any] = tomllib.loads(custom) if custom else {}
    except tomllib.TOMLDecodeError as exc:
        raise UserDataError(f"spec.userData: not valid TOML for Bottlerocket: {exc}") from exc
    kubernetes: dict[str, Any] = {
        "api-server": cluster.endpoint,
        "cluster-certificate": cluster.certificate_authority,
        "cluster-name": cluster.name,
        "cluster-dns-ip": cluster.dns_ip,
        "node-labels": dict(node.labels),
    }
    if node.max_pods is not None:
        kubernetes["max-pods"] = node.max_pods
    if node.taints:
        taints: dict[str, list[str]] = {}
        for taint in node.taints:
            taints.setdefault(taint.key, []).append(f"{taint.value}:{taint.effect}")
        kubernetes["node-taints"] = taints
    merged = _merge(settings, {"settings": {"kubernetes": kubernetes}})
    return toml(merged)


def _windows(cluster: ClusterInfo, node: NodeSettings, custom: str | None) -> str:
    extra = [f"--node-labels={_labels_flag(node)}"]
    if node.taints:
        extra.append(f"--register-with-taints={','.join(map(str, node.taints))}")
    if node.max_pods is not None:
        extra.append(f"--max-pods={node.max_pods}")
    own = (custom or "").replace("<powershell>", "").replace("</powershell>", "").strip()
    lines = ["<powershell>", *([own] if own else [])]
    lines += [
        f'[string]$EKSBootstrapScriptFile = "{WINDOWS_BOOTSTRAP}"',
        f"& $EKSBootstrapScriptFile -EKSClusterName '{cluster.name}' "
        f"-APIServerEndpoint '{cluster.endpoint}' "
        f"-Base64ClusterCA '{cluster.certificate_authority}' "
        f"-KubeletExtraArgs '{' '.join(extra)}' -DNSClusterIP '{cluster.dns_ip}'",
        "</powershell>",
    ]
    return "\n".join(lines) + "\n"


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def toml(data: Mapping[str, Any], prefix: str = "") -> str:
    """A TOML document of nested tables whose leaves are strings, numbers, booleans or lists."""
    scalars = [(k, v) for k, v in data.items() if not isinstance(v, Mapping)]
    tables = [(k, v) for k, v in data.items() if isinstance(v, Mapping)]
    lines = [f"[{prefix}]"] if prefix and scalars else []
    lines += [f"{_key(k)} = {_value(v)}" for k, v in scalars]
    out = "\n".join(lines) + ("\n" if lines else "")
    for key, table in tables:
        section = toml(table, f"{prefix}.{_key(key)}" if prefix else _key(key))
        out += ("\n" if out and section else "") + section
    return out


def _key(key: str) -> str:
    bare = key.replace("-", "").replace("_", "").isalnum()
    return key if bare else _value(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    escaped = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'
