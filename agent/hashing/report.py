"""The drift hashes Karpenter would stamp on each NodePool and EC2NodeClass
(``karpenter.sh/nodepool-hash`` and ``karpenter.k8s.aws/ec2nodeclass-hash``, with their
versions), so an operator can check before a takeover that no node would drift (``driftwave
agent hash``).

Objects read from a cluster (``kubectl get nodepools,ec2nodeclasses -o yaml``) carry the hash
Karpenter stamped; each stamp then says whether driftwave's agrees. An EC2NodeClass's hash
includes the cluster's CA bundle, as in Karpenter: give the value Karpenter runs with (its setting
``CLUSTER_CA_BUNDLE``, or the CA of its connection to the API server: a kubeconfig's
``certificate-authority-data``, or the CA file itself).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodepool import NodePool
from agent.api.validate import ScenarioCheck, expand, validate_paths
from agent.hashing.stamps import (
    NODECLASS_HASH,
    NODECLASS_HASH_VERSION,
    NODECLASS_VERSION,
    NODEPOOL_HASH,
    NODEPOOL_HASH_VERSION,
    NODEPOOL_VERSION,
    nodeclass_hash,
    nodepool_hash,
)
from common.documents import Finding, KindKey
from common.kubemodel import KubeModel


class CABundleError(ValueError):
    """The CA bundle could not be read from the option that names it."""


@dataclass(frozen=True)
class Stamp:
    """The hash Karpenter would stamp on one object, and the one the object carries."""

    kind: str
    name: str
    hash: str
    hash_version: str
    carried: str | None = None
    """The hash the object carries under the same version (None: none, or another version)."""
    carried_version: str | None = None
    source: str = ""
    """The file the object was read from."""

    @property
    def verdict(self) -> str:
        """``agrees``, ``differs`` (its nodes would drift), ``other version`` (re-stamped, not
        compared) or ``unstamped``."""
        if self.carried_version is None:
            return "unstamped"
        if self.carried_version != self.hash_version:
            return "other version"
        return "agrees" if self.carried == self.hash else "differs"

    def as_dict(self) -> dict[str, str]:
        """``{kind, name, hash, hashVersion}``."""
        return {
            "kind": self.kind,
            "name": self.name,
            "hash": self.hash,
            "hashVersion": self.hash_version,
        }


def _stamp(
    kind: str,
    name: str,
    value: str,
    version: str,
    annotations: dict[str, str],
    keys: tuple[str, str],
) -> Stamp:
    return Stamp(kind, name, value, version, annotations.get(keys[0]), annotations.get(keys[1]))


def stamps(objects: Iterable[KubeModel], ca_bundle: str | None = None) -> list[Stamp]:
    """The stamps of the NodePools and EC2NodeClasses among ``objects`` (others are skipped)."""
    out: list[Stamp] = []
    for obj in objects:
        if isinstance(obj, NodePool):
            out.append(
                _stamp(
                    "NodePool",
                    obj.name,
                    nodepool_hash(obj),
                    NODEPOOL_VERSION,
                    obj.metadata.annotations,
                    (NODEPOOL_HASH, NODEPOOL_HASH_VERSION),
                )
            )
        elif isinstance(obj, EC2NodeClass):
            out.append(
                _stamp(
                    "EC2NodeClass",
                    obj.metadata.name or "",
                    nodeclass_hash(obj, ca_bundle),
                    NODECLASS_VERSION,
                    obj.metadata.annotations,
                    (NODECLASS_HASH, NODECLASS_HASH_VERSION),
                )
            )
    return out


def ca_bundle_from_file(path: Path) -> str:
    """A CA file (PEM) as Karpenter passes it on: its bytes, base64-encoded."""
    try:
        return base64.b64encode(path.read_bytes()).decode()
    except OSError as exc:
        raise CABundleError(f"--ca-file: cannot read {path}: {exc.strerror}") from exc


def ca_bundle_from_kubeconfig(path: Path, context: str | None = None) -> str:
    """The CA bundle of a kubeconfig's cluster (the current context's, or ``context``'s):
    its ``certificate-authority-data``, or its ``certificate-authority`` file base64-encoded."""
    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CABundleError(f"--kubeconfig: cannot read {path}: {exc.strerror}") from exc
    except yaml.composer.ComposerError as exc:
        raise CABundleError(
            f"--kubeconfig: {path} holds several YAML documents (rule: a kubeconfig is one)"
        ) from exc
    except yaml.YAMLError as exc:
        raise CABundleError(f"--kubeconfig: {path} is not YAML ({exc})") from exc
    if not isinstance(config, dict):
        raise CABundleError(f"--kubeconfig: {path} is not a kubeconfig")
    wanted = context or config.get("current-context")
    if not wanted:
        raise CABundleError("--kubeconfig: no current-context (name one with --context)")
    cluster_name = _named(config, "contexts", wanted, "context").get("cluster")
    if not isinstance(cluster_name, str):
        raise CABundleError(f"--kubeconfig: context {wanted!r} names no cluster")
    cluster = _named(config, "clusters", cluster_name, "cluster")
    data = cluster.get("certificate-authority-data")
    if isinstance(data, str) and data:
        return data
    file = cluster.get("certificate-authority")
    if isinstance(file, str) and file:
        return ca_bundle_from_file(
            (path.parent / file) if not Path(file).is_absolute() else Path(file)
        )
    raise CABundleError(f"--kubeconfig: cluster {cluster_name!r} names no certificate authority")


def _named(config: dict[str, Any], section: str, name: str, inner: str) -> dict[str, Any]:
    for entry in config.get(section) or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            body = entry.get(inner)
            if isinstance(body, dict):
                return body
    raise CABundleError(f"--kubeconfig: no {section[:-1]} named {name!r}")


def as_json(found: list[Stamp]) -> str:
    """The stamps as a JSON list of ``{kind, name, hash, hashVersion}``."""
    return json.dumps([s.as_dict() for s in found], indent=2)


def hash_files(
    paths: Iterable[Path],
    kinds: Mapping[KindKey, type[KubeModel]],
    ca_bundle: str | None,
    scenarios: ScenarioCheck | None = None,
) -> tuple[list[Stamp], list[Finding]]:
    """The stamps of the NodePools and EC2NodeClasses in ``paths`` (files or directories, as
    ``driftwave validate`` reads them, a Scenario checked by ``scenarios``), each with its file,
    and the errors found reading them (with any error, no stamps)."""
    found: list[Stamp] = []
    errors: list[Finding] = []
    for path in expand(paths):
        report = validate_paths([path], kinds, scenarios=scenarios)
        errors += [f for f in report.findings if f.severity == "error"]
        source = "<stdin>" if str(path) == "-" else str(path)
        found += [replace(s, source=source) for s in stamps(report.objects, ca_bundle)]
    return ([] if errors else found), errors


__all__ = [
    "CABundleError",
    "Stamp",
    "as_json",
    "ca_bundle_from_file",
    "ca_bundle_from_kubeconfig",
    "hash_files",
    "stamps",
]
