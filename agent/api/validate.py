"""Checking manifest files against Karpenter v1's rules (and more kinds registered by the
caller), as ``driftwave validate`` does: each finding reads ``FILE:LINE kind/name: field.path:
message``."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeGuard

from agent.api.lint import lint
from common.documents import (
    STDIN,
    Document,
    Finding,
    KindKey,
    Linter,
    ManifestSyntaxError,
    check_document,
    read_documents,
)
from common.kubemodel import KubeModel

if TYPE_CHECKING:  # its models load only when a document is a Scenario (driftwave.cli.kinds)
    from agent.api.scenario import Scenario

YAML_SUFFIXES = (".yaml", ".yml")

ScenarioCheck = Callable[
    [Path, Document, "Scenario", Iterable[Linter]], tuple[list[KubeModel], list[Finding]]
]
"""Checks a Scenario whole (its manifests, files, events and AMIs): the objects it starts with
and every finding about it. The simulation's own check is it
(:func:`agent.sim.scenario_check.scenario_objects`, passed in by the command line); these models
do not import the simulation."""


@dataclass
class Report:
    """What a validation run found, over all files."""

    files: int = 0
    documents: int = 0
    findings: list[Finding] = field(default_factory=list)
    objects: list[KubeModel] = field(default_factory=list)

    @property
    def errors(self) -> int:
        """How many errors."""
        return sum(1 for f in self.findings if f.severity == "error")

    @property
    def warnings(self) -> int:
        """How many warnings."""
        return sum(1 for f in self.findings if f.severity == "warning")

    def summary(self) -> str:
        """One line: counts of files, documents, errors and warnings."""
        return (
            f"{self.documents} document(s) in {self.files} file(s): "
            f"{self.errors} error(s), {self.warnings} warning(s)"
        )

    def as_json(self) -> str:
        """The report as a JSON document."""
        return json.dumps(
            {
                "files": self.files,
                "documents": self.documents,
                "errors": self.errors,
                "warnings": self.warnings,
                "findings": [f.as_dict() for f in self.findings],
            },
            indent=2,
        )


def expand(paths: Iterable[Path]) -> list[Path]:
    """Files to read: each file as given, and the YAML files under each directory, sorted."""
    files: list[Path] = []
    for path in paths:
        if str(path) != STDIN and path.is_dir():
            files.extend(
                sorted(
                    p
                    for p in path.rglob("*")
                    if p.suffix in YAML_SUFFIXES
                    and p.is_file()
                    and not any(part.startswith(".") for part in p.relative_to(path).parts)
                )
            )
        else:
            files.append(path)
    return files


def validate_paths(
    paths: Iterable[Path],
    kinds: Mapping[KindKey, type[KubeModel]],
    linters: Iterable[Linter] = (lint,),
    scenarios: ScenarioCheck | None = None,
) -> Report:
    """Validate every document of every file; unreadable files are reported as errors. With
    ``scenarios``, a Scenario is checked whole, as ``agent simulate`` reads it (its manifests,
    files, events and AMIs), and the linters' warnings cover the manifests it starts with and
    applies; without, only as a document."""
    report = Report()
    linters = tuple(linters)
    seen: set[tuple[str, int, str, str, str]] = set()
    for path in expand(paths):
        report.files += 1
        source = "<stdin>" if str(path) == STDIN else str(path)
        try:
            documents = read_documents(path)
        except ManifestSyntaxError as exc:
            report.findings.append(Finding(source, 0, "?", "", "", exc.reason))
            continue
        except OSError as exc:
            report.findings.append(Finding(source, 0, "?", "", "", f"cannot read: {exc.strerror}"))
            continue
        for doc in documents:
            report.documents += 1
            obj, findings = check_document(doc, kinds, linters)
            if scenarios is not None and _is_scenario(obj):  # its start and events, as simulate
                findings += scenarios(path, doc, obj, linters)[1]
            for found in findings:  # a manifest file read by a scenario may be given too
                if _where(found) not in seen:
                    seen.add(_where(found))
                    report.findings.append(found)
            if obj is not None:
                report.objects.append(obj)
    return report


def _is_scenario(obj: KubeModel | None) -> TypeGuard[Scenario]:
    """Whether ``obj`` is a :class:`~agent.api.scenario.Scenario`, without importing its module
    (none is unless the module was imported, by a look-up of its kind)."""
    scenario = sys.modules.get("agent.api.scenario")
    return scenario is not None and isinstance(obj, scenario.Scenario)


def _where(found: Finding) -> tuple[str, int, str, str, str]:
    """A finding's identity, its file named by its resolved path (reported once)."""
    source = found.source
    if source != "<stdin>":
        source = str(Path(source).resolve())
    return source, found.document, found.path, found.message, found.severity
