"""Reading manifest files: multi-document YAML split into documents, each checked against the
kinds its reader knows, and findings.

A finding is one error or warning about one document, printed as
``FILE:LINE kind/name: field.path: what is wrong and the rule``, LINE being the line where the
document starts (its first key), so that an editor given ``FILE:LINE`` opens the document. The
reader passes its kinds (the agent's in :mod:`agent.api.kinds`, the fleet's in
:mod:`fleet.domain.manifests`). Documents of kinds nobody registered are reported as warnings
and otherwise left alone, so a file may mix Karpenter objects with the rest of an application's
manifests; Karpenter's own API groups are recognised whoever reads, so that an old or misspelt
Karpenter kind is an error everywhere.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal, TextIO

from common.kubemodel import KubeModel, ManifestInvalid, parse_manifest, scrubbed
from common.yamlsafe import YamlError, load_located

Severity = Literal["error", "warning"]
KindKey = tuple[str, str]
Linter = Callable[[KubeModel], Iterable[tuple[str, str]]]

OLD_API_VERSIONS = frozenset({"karpenter.sh/v1beta1", "karpenter.k8s.aws/v1beta1"})
MOVED_IN_V1 = {
    ("NodePool", "spec.disruption.expireAfter"): "spec.template.spec.expireAfter",
    ("NodePool", "spec.template.spec.kubelet"): "the EC2NodeClass's spec.kubelet",
}
"""Fields v1beta1 had that v1 moved: an unknown-field error on them says where they went."""


class ManifestSyntaxError(ValueError):
    """A file is not readable YAML, or over a limit; the message names the file and the line."""

    def __init__(self, source: str, reason: str, limit: str | None = None) -> None:
        self.source = source
        self.reason = reason
        self.limit = limit
        """The :class:`~common.yamlsafe.YamlLimits` limit the file is over, if that is why."""
        super().__init__(f"{source}: {reason}")


@dataclass(frozen=True)
class Document:
    """One YAML document of a file: where it came from and its plain data."""

    source: str
    index: int
    data: Any
    prefix: str = ""
    """``items[N]`` when the document is an item of a ``kind: List`` (``kubectl get -o yaml``)."""
    line: int = 0
    """The line (from 1) where the document (or the List's item) starts; 0 when unknown."""

    @property
    def kind(self) -> str:
        """The document's ``kind`` (or ``?``)."""
        return str(self.data.get("kind", "?")) if isinstance(self.data, dict) else "?"

    @property
    def name(self) -> str:
        """The document's ``metadata.name`` (or empty)."""
        meta = self.data.get("metadata") if isinstance(self.data, dict) else None
        return str(meta.get("name", "")) if isinstance(meta, dict) else ""


@dataclass(frozen=True)
class Finding:
    """An error or a warning about one document: ``document`` is its number in the file (from
    1; 0: about the whole file), ``line`` the line where it starts (0: unknown)."""

    source: str
    document: int
    kind: str
    name: str
    path: str
    message: str
    severity: Severity = "error"
    line: int = 0

    def __post_init__(self) -> None:
        for name in ("source", "kind", "name", "path", "message"):
            object.__setattr__(self, name, scrubbed(str(getattr(self, name))))

    def __str__(self) -> str:
        if self.document == 0:
            return f"{self.source}: {self.message}"
        where = f"{located(self.source, self.document, self.line)} {self.kind}/"
        where += self.name or "<unnamed>"
        label = "" if self.severity == "error" else "warning: "
        field = f"{self.path}: " if self.path else ""
        return f"{where}: {label}{field}{self.message}"

    def as_dict(self) -> dict[str, Any]:
        """The finding as JSON-ready data."""
        return asdict(self)


def located(source: str, document: int, line: int) -> str:
    """Where a document is, as people and editors read it: ``FILE:LINE`` (the line where it
    starts), or ``FILE (document N)`` when its line is not known (never ``FILE:N`` for a
    document number, which reads as a line)."""
    return f"{source}:{line}" if line else f"{source} (document {document})"


def load_documents(text: str, source: str) -> list[Document]:
    """Split multi-document YAML into documents (empty documents are skipped, numbering kept).

    YAML is read within :data:`common.yamlsafe.LIMITS`, with YAML 1.1 scalars, as kubectl
    reads it (``yes`` is a boolean there too); :class:`ManifestSyntaxError` otherwise.
    """
    try:
        loaded = load_located(text)
    except YamlError as exc:
        raise ManifestSyntaxError(source, exc.reason, exc.limit) from exc
    documents: list[Document] = []
    for index, found in enumerate(loaded, start=1):
        data = found.data
        if data is None:
            continue
        items = data.get("items") if isinstance(data, dict) else None
        if (
            isinstance(data, dict)
            and str(data.get("kind", "")).endswith("List")
            and isinstance(items, list)
        ):
            lines = found.items if len(found.items) == len(items) else (found.line,) * len(items)
            documents.extend(
                Document(source, index, item, f"items[{n}]", lines[n])
                for n, item in enumerate(items)
            )
        else:
            documents.append(Document(source, index, data, line=found.line))
    return documents


STDIN = "-"


def read_documents(path: Path, stdin: TextIO | None = None) -> list[Document]:
    """Read a manifest file (``-`` reads ``stdin``); raises ManifestSyntaxError or OSError."""
    if str(path) == STDIN:
        return load_documents((stdin or sys.stdin).read(), "<stdin>")
    return load_documents(read_text(path), str(path))


def read_text(path: Path) -> str:
    """A manifest file's text; raises ManifestSyntaxError when it is not UTF-8, else OSError."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ManifestSyntaxError(str(path), f"not UTF-8 text ({exc.reason})") from exc


def check_document(
    doc: Document,
    kinds: Mapping[KindKey, type[KubeModel]],
    linters: Iterable[Linter] = (),
) -> tuple[KubeModel | None, list[Finding]]:
    """Validate one document against its kind's model; run the linters on a valid object."""

    def finding(path: str, message: str, severity: Severity = "error") -> Finding:
        full = f"{doc.prefix}.{path}" if doc.prefix and path else (doc.prefix or path)
        return Finding(doc.source, doc.index, doc.kind, doc.name, full, message, severity, doc.line)

    if not isinstance(doc.data, dict):
        return None, [finding("", "a manifest must be a mapping with apiVersion and kind")]
    model, problem = resolve_kind(doc.data, kinds)
    if model is None:
        path, message, severity = problem
        return None, [finding(path, message, severity)]
    meta = doc.data.get("metadata")
    if not isinstance(meta, dict) or not (meta.get("name") or meta.get("generateName")):
        return None, [
            finding("metadata.name", "required field is missing (every object has a name)")
        ]
    try:
        obj = parse_manifest(model, doc.data)
    except ManifestInvalid as exc:
        return None, [
            finding(issue.path, _with_hint(doc.kind, issue.path, issue.message))
            for issue in exc.issues
        ]
    warnings = [
        finding(path, message, "warning") for lint in linters for path, message in lint(obj)
    ]
    return obj, warnings


def is_skipped(finding: Finding) -> bool:
    """Whether a finding only says that a document's kind is not one driftwave checks."""
    return finding.severity == "warning" and finding.message.endswith(SKIPPED)


SKIPPED = "; skipped"
KARPENTER_GROUPS = ("karpenter.sh", "karpenter.k8s.aws")
ALPHA_KINDS = {"Provisioner": "NodePool", "AWSNodeTemplate": "EC2NodeClass", "Machine": "NodeClaim"}


def resolve_kind(
    data: dict[str, Any], kinds: Mapping[KindKey, type[KubeModel]]
) -> tuple[type[KubeModel] | None, tuple[str, str, Severity]]:
    """The model for a document, or (None, (path, message, severity)) saying why there is none.

    Karpenter's own groups are errors when the kind or version is wrong (a typo there would
    otherwise pass unchecked); other unknown kinds are warnings and are skipped.
    """
    api_version = str(data.get("apiVersion", ""))
    kind = str(data.get("kind", ""))
    model = kinds.get((api_version, kind))
    if model is not None:
        return model, ("", "", "error")
    if api_version in OLD_API_VERSIONS:
        return None, (
            "apiVersion",
            f"{api_version} is the pre-v1 API, which Karpenter v1 no longer serves: "
            "convert it with `driftwave migrate FILE -o OUT`",
            "error",
        )
    if kind in ALPHA_KINDS and api_version.split("/")[0] in KARPENTER_GROUPS:
        return None, (
            "kind",
            f"{api_version} {kind} is Karpenter's alpha API, replaced by {ALPHA_KINDS[kind]} in "
            "v1beta1 (Karpenter v0.32): follow Karpenter's v1beta1 migration guide, then run "
            "`driftwave migrate`",
            "error",
        )
    known = sorted({k for _, k in kinds})
    if not api_version:
        versions = sorted(v for v, k in kinds if k == kind)
        if versions:
            return None, ("apiVersion", f"required field is missing (use {versions[0]})", "error")
        return None, ("", f"no apiVersion: not a Kubernetes manifest{SKIPPED}", "warning")
    if api_version.split("/")[0] in KARPENTER_GROUPS:
        expected = sorted(f"{v} {k}" for v, k in kinds if v.split("/")[0] in KARPENTER_GROUPS)
        return None, (
            "kind",
            f"{api_version} {kind or '<no kind>'} is not a Karpenter kind; expected one of: "
            f"{', '.join(expected)}",
            "error",
        )
    return None, (
        "",
        f"{api_version} {kind or '<no kind>'} is not a kind driftwave checks "
        f"(it checks {', '.join(known)}){SKIPPED}",
        "warning",
    )


def _with_hint(kind: str, path: str, message: str) -> str:
    moved = MOVED_IN_V1.get((kind, path))
    if moved and message.startswith("unknown field"):
        message = message.split("; did you mean", 1)[0]  # where it went says more
        return (
            f"{message}; Karpenter v1 moved it to {moved} (`driftwave migrate` moves it when "
            "it converts the v1beta1 object)"
        )
    return message
