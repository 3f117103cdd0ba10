"""Reading Fleet and Release manifest files: the kinds, one object per file, findings.

Errors and warnings are :class:`common.documents.Finding` values, printed as
``FILE:LINE Kind/name: field.path: message (rule)`` like ``driftwave validate`` prints them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from common.documents import (
    Document,
    Finding,
    KindKey,
    ManifestSyntaxError,
    check_document,
    load_documents,
    read_documents,
)
from common.kubemodel import KubeModel
from fleet.domain.errors import ManifestError
from fleet.domain.fleet import Fleet
from fleet.domain.lint import fleet_lint
from fleet.domain.model import FleetInfo, ReleaseInfo, release_problems
from fleet.domain.release import Release

API_VERSION = "driftwave.io/v1alpha1"
M = TypeVar("M", Fleet, Release)


def fleet_kinds() -> dict[KindKey, type[KubeModel]]:
    """The fleet's own manifest kinds, mapped to their models (for ``check_document``)."""
    return {(API_VERSION, "Fleet"): Fleet, (API_VERSION, "Release"): Release}


@dataclass(frozen=True)
class Loaded(Generic[M]):
    """An object read from a manifest file, where it was, and the warnings about it."""

    obj: M
    source: str
    document: int
    warnings: list[Finding]
    line: int = 0
    """The line where the object's document starts (0: unknown)."""


def load_one(path: Path, model: type[M]) -> Loaded[M]:
    """Read a file that must hold exactly one object of ``model``'s kind (and nothing else).

    Raises :class:`ManifestError` with every finding when the file cannot be read, or the
    object breaks a rule, or the file holds no such object, several, or other documents.
    """
    source = str(path)
    try:
        documents = read_documents(path)
    except ManifestSyntaxError as exc:
        raise ManifestError(source, [Finding(source, 0, "?", "", "", exc.reason)]) from exc
    except OSError as exc:
        finding = Finding(source, 0, "?", "", "", f"cannot read: {exc.strerror}")
        raise ManifestError(source, [finding]) from exc
    return _one(documents, source, model)


def parse_one(text: str, source: str, model: type[M]) -> Loaded[M]:
    """Like :func:`load_one`, for manifest text (``source`` names it in findings)."""
    try:
        documents = load_documents(text, source)
    except ManifestSyntaxError as exc:
        raise ManifestError(source, [Finding(source, 0, "?", "", "", exc.reason)]) from exc
    return _one(documents, source, model)


def load_fleet(path: Path) -> Fleet:
    """The Fleet a file holds; :class:`ManifestError` with every finding otherwise."""
    return load_one(path, Fleet).obj


def load_release(path: Path) -> Release:
    """The Release a file holds; :class:`ManifestError` with every finding otherwise."""
    return load_one(path, Release).obj


def _one(documents: Sequence[Document], source: str, model: type[M]) -> Loaded[M]:
    kind = model.__name__
    findings: list[Finding] = []
    found: list[tuple[M, Document]] = []
    for doc in documents:
        if doc.kind != kind:
            findings.append(_stray(doc, kind))
            continue
        version = doc.data.get("apiVersion") if isinstance(doc.data, dict) else None
        if version != API_VERSION:
            findings.append(_wrong_version(doc, version))
            continue
        obj, problems = check_document(doc, fleet_kinds(), (fleet_lint,))
        findings.extend(problems)
        if isinstance(obj, model):
            found.append((obj, doc))
    if len(found) > 1:
        doc = found[1][1]
        findings.append(
            Finding(
                source,
                doc.index,
                doc.kind,
                doc.name,
                "",
                f"a second {kind} in the file (rule: the file holds exactly one {kind})",
                line=doc.line,
            )
        )
    if not documents:
        findings.append(Finding(source, 0, "?", "", "", f"no {kind} in the file (it is empty)"))
    errors = [f for f in findings if f.severity == "error"]
    if errors or not found:
        raise ManifestError(source, findings)
    obj, doc = found[0]
    return Loaded(obj, source, doc.index, findings, doc.line)


def _stray(doc: Document, kind: str) -> Finding:
    return Finding(
        doc.source,
        doc.index,
        doc.kind,
        doc.name,
        "kind",
        f"expected a {API_VERSION} {kind} here, found kind {doc.kind!r} "
        f"(rule: the file holds exactly one {kind} and nothing else)",
        line=doc.line,
    )


def _wrong_version(doc: Document, version: object) -> Finding:
    return Finding(
        doc.source,
        doc.index,
        doc.kind,
        doc.name,
        "apiVersion",
        f"{version or '<none>'} is not an API version of {doc.kind} "
        f"(rule: apiVersion: {API_VERSION})",
        line=doc.line,
    )


def release_fleet_findings(
    release: Loaded[Release], release_data: ReleaseInfo, fleet: FleetInfo
) -> list[Finding]:
    """Findings about a Release read against the Fleet it rolls through: errors, the rules of
    :func:`fleet.domain.model.release_problems` (a release that selects no cluster included)."""
    name = release.obj.name
    return [
        Finding(release.source, release.document, "Release", name, path, message, line=release.line)
        for path, message in release_problems(release_data, fleet)
    ]
