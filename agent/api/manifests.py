"""Reading manifest files: multi-document YAML, the kinds driftwave knows, and findings.

A finding is one error or warning about one document, printed as
``FILE:DOC kind/name: field.path: what is wrong and the rule``. Documents of kinds nobody
registered are reported as warnings and otherwise left alone, so a file may mix Karpenter objects
with the rest of an application's manifests.
"""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal, TextIO

import yaml

from agent.api.base import KubeModel, ManifestInvalid, parse_manifest
from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodeclaim import NodeClaim
from agent.api.nodepool import NodePool

Severity = Literal["error", "warning"]
KindKey = tuple[str, str]
Linter = Callable[[KubeModel], Iterable[tuple[str, str]]]

KARPENTER_KINDS: Mapping[KindKey, type[KubeModel]] = {
    ("karpenter.sh/v1", "NodePool"): NodePool,
    ("karpenter.sh/v1", "NodeClaim"): NodeClaim,
    ("karpenter.k8s.aws/v1", "EC2NodeClass"): EC2NodeClass,
}
OLD_API_VERSIONS = frozenset({"karpenter.sh/v1beta1", "karpenter.k8s.aws/v1beta1"})
MOVED_IN_V1 = {
    ("NodePool", "spec.disruption.expireAfter"): "spec.template.spec.expireAfter",
    ("NodePool", "spec.template.spec.kubelet"): "the EC2NodeClass's spec.kubelet",
}
"""Fields v1beta1 had that v1 moved: an unknown-field error on them says where they went."""


class ManifestSyntaxError(ValueError):
    """A file is not readable YAML; the message names the file and the line."""

    def __init__(self, source: str, reason: str) -> None:
        self.source = source
        self.reason = reason
        super().__init__(f"{source}: {reason}")


@dataclass(frozen=True)
class Document:
    """One YAML document of a file: where it came from and its plain data."""

    source: str
    index: int
    data: Any
    prefix: str = ""
    """``items[N]`` when the document is an item of a ``kind: List`` (``kubectl get -o yaml``)."""

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
    """An error or a warning about one document."""

    source: str
    document: int
    kind: str
    name: str
    path: str
    message: str
    severity: Severity = "error"

    def __str__(self) -> str:
        if self.document == 0:
            return f"{self.source}: {self.message}"
        where = f"{self.source}:{self.document} {self.kind}/{self.name or '<unnamed>'}"
        label = "" if self.severity == "error" else "warning: "
        field = f"{self.path}: " if self.path else ""
        return f"{where}: {label}{field}{self.message}"

    def as_dict(self) -> dict[str, Any]:
        """The finding as JSON-ready data."""
        return asdict(self)


def plain(value: Any) -> Any:
    """Loaded YAML as plain JSON-like data (timestamps become RFC 3339 strings)."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dt.datetime):
        text = value.isoformat()
        return text.replace("+00:00", "Z") if value.tzinfo else text + "Z"
    if isinstance(value, dt.date):
        return value.isoformat()
    return value


class _StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """The safe loader, refusing a key that appears twice in one mapping (as kubectl does)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key != "<<" and key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return mapping


def load_documents(text: str, source: str) -> list[Document]:
    """Split multi-document YAML into documents (empty documents are skipped, numbering kept).

    YAML is read with YAML 1.1 scalars, as kubectl reads it (``yes`` is a boolean there too).
    """
    try:
        loaded = list(yaml.load_all(text, Loader=_StrictLoader))
        loaded = [plain(data) for data in loaded]
    except yaml.YAMLError as exc:
        raise ManifestSyntaxError(source, f"not valid YAML: {exc}") from exc
    except RecursionError as exc:
        raise ManifestSyntaxError(source, "not readable: nested too deeply") from exc
    documents: list[Document] = []
    for index, data in enumerate(loaded, start=1):
        if data is None:
            continue
        items = data.get("items") if isinstance(data, dict) else None
        if (
            isinstance(data, dict)
            and str(data.get("kind", "")).endswith("List")
            and isinstance(items, list)
        ):
            documents.extend(
                Document(source, index, item, f"items[{n}]") for n, item in enumerate(items)
            )
        else:
            documents.append(Document(source, index, data))
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
        return Finding(doc.source, doc.index, doc.kind, doc.name, full, message, severity)

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
        return (
            f"{message}; Karpenter v1 moved it to {moved} (`driftwave migrate` moves it when "
            "it converts the v1beta1 object)"
        )
    return message
