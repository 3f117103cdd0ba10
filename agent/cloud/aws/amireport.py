"""The images an EC2NodeClass selects in AWS, and why (``driftwave agent amis``).

For each EC2NodeClass in the file it lists every image its ``amiSelectorTerms`` select (the SSM
parameter an alias read, or the term that matched), which of them the node class would use
(``chosen``: the newest non-deprecated image per set of requirements, as Karpenter writes
``status.amis``) and why the others are not. The Kubernetes version an alias resolves for is
``--kubernetes-version``, else the EKS cluster's (DescribeCluster). AWS is reached through the
usual chain (environment, ``--profile``, ``--region``; ``AWS_ENDPOINT_URL`` is honoured).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.kinds import KARPENTER_KINDS
from agent.clock import SystemClock
from agent.cloud.amiresolve import (
    AMIResolutionError,
    Image,
    alias_matches,
    term_images,
)
from agent.cloud.amirules import ImageMatch, image_requirements, newest_per_requirements
from common.documents import check_document, read_documents

if TYPE_CHECKING:
    from agent.cloud.aws.amis import AWSImages
    from agent.cloud.aws.session import AWSClients


class AmisError(Exception):
    """The command cannot run: bad input, or AWS refused; ``lines`` are what to print."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("; ".join(lines))
        self.lines = lines


@dataclass(frozen=True)
class AmisRequest:
    """What ``driftwave agent amis`` was asked."""

    path: Path
    kubernetes_version: str | None = None
    cluster_name: str | None = None
    region: str | None = None
    profile: str | None = None


def nodeclasses(path: Path) -> list[EC2NodeClass]:
    """The file's EC2NodeClasses, validated; raises AmisError naming each problem."""
    try:
        documents = read_documents(path)
    except (OSError, ValueError) as exc:
        raise AmisError([f"{path}: {exc}"]) from exc
    found: list[EC2NodeClass] = []
    problems: list[str] = []
    for doc in documents:
        if doc.kind != "EC2NodeClass":
            continue
        obj, findings = check_document(doc, KARPENTER_KINDS)
        problems += [str(f) for f in findings if f.severity == "error"]
        if isinstance(obj, EC2NodeClass):
            found.append(obj)
    if problems:
        raise AmisError(problems)
    if not found:
        raise AmisError([f"{path}: no karpenter.k8s.aws/v1 EC2NodeClass in the file"])
    return found


def report(request: AmisRequest) -> dict[str, Any]:
    """The images per node class (module docstring); raises AmisError."""
    classes = nodeclasses(request.path)
    # Imported once the file is read: a bad file is refused without loading the AWS SDK.
    from agent.cloud.aws.amis import AWSImages
    from agent.cloud.aws.controlplane import ControlPlaneError
    from agent.cloud.aws.errors import AWSError
    from agent.cloud.aws.session import AWSClients, AWSConfig

    clients = AWSClients(AWSConfig(region=request.region, profile=request.profile))
    try:
        version = request.kubernetes_version or _cluster_version(clients, request.cluster_name)
        images = AWSImages(clients)
        return {
            "kubernetesVersion": version,
            "nodeClasses": [_explain(images, nc, version) for nc in classes],
        }
    except (AWSError, ControlPlaneError) as exc:
        raise AmisError([str(exc)]) from exc


def _cluster_version(clients: AWSClients, cluster_name: str | None) -> str:
    if not cluster_name:
        raise AmisError(
            [
                "--kubernetes-version: needed to resolve aliases (or give --cluster-name / "
                "DRIFTWAVE_CLUSTER_NAME to read the EKS cluster's version)"
            ]
        )
    from agent.cloud.aws.controlplane import EKSControlPlane

    return EKSControlPlane(clients, cluster_name, SystemClock()).version()


def _explain(images: AWSImages, nodeclass: EC2NodeClass, version: str) -> dict[str, Any]:
    terms = nodeclass.spec.ami_selector_terms
    alias = next((t.alias for t in terms if t.alias), None)
    rows: list[tuple[Image | None, ImageMatch, str]] = []
    try:
        if alias is not None:
            for path, match in alias_matches(images, alias, version):
                rows.append((None, match, f"alias {alias}: SSM {path}"))
        else:
            for selected in term_images(images, terms):
                image = selected.image
                match = ImageMatch(
                    image.id, image.name, image.created, image.deprecated,
                    tuple(image_requirements(image.arch)),
                )  # fmt: skip
                rows.append((image, match, selected.reason))
    except AMIResolutionError as exc:
        return {"name": nodeclass.name, "images": [], "error": str(exc)}
    chosen = {a.id for a in newest_per_requirements([m for _, m, _ in rows])} if rows else set()
    listed = []
    seen: set[str] = set()
    for _, match, why in rows:
        if match.id in seen:
            continue
        seen.add(match.id)
        listed.append(
            {
                "id": match.id,
                "name": match.name,
                "created": match.created.isoformat().replace("+00:00", "Z"),
                "deprecated": match.deprecated,
                "chosen": match.id in chosen,
                "why": why if match.id in chosen else f"{why}; not chosen: {_passed_over(match)}",
                "requirements": [
                    f"{r.key} {r.operator} {','.join(r.values or [])}".strip()
                    for _, m, _ in rows
                    if m.id == match.id
                    for r in m.requirements
                ],
            }
        )
    result: dict[str, Any] = {"name": nodeclass.name, "images": listed}
    if not listed:
        result["error"] = (
            f"failed to discover any AMIs for alias {alias} on Kubernetes {version}"
            if alias
            else "amiSelectorTerms did not match any AMIs"
        )
    return result


def _passed_over(match: ImageMatch) -> str:
    if match.deprecated:
        return "deprecated, and a non-deprecated image covers the same requirements"
    return "a newer image covers the same requirements"


def as_json(result: dict[str, Any]) -> str:
    """The report as JSON."""
    return json.dumps(result, indent=2)
