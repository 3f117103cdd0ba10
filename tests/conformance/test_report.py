"""The conformance suites keep their word: docs/karpenter-compatibility.md reports the counts the
marks give, and every mirrored Karpenter test exists, by that name, in the Karpenter release we
follow."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conformance.karpenter import (
    REPOSITORIES,
    conformance_modules,
    departure_list,
    suite_counts,
    table,
)
from tests.support.required import unavailable

PAGE = Path(__file__).resolve().parents[2] / "docs" / "karpenter-compatibility.md"


def _between(text: str, marker: str) -> str:
    found = re.search(rf"<!-- {marker} -->\n(.*?)\n<!-- /{marker} -->", text, re.DOTALL)
    assert found, f"{PAGE.name} has no <!-- {marker} --> section"
    return found.group(1).strip()


def test_the_docs_report_each_suites_counts() -> None:
    counts = suite_counts()
    page = PAGE.read_text(encoding="utf-8")
    assert _between(page, "conformance-table") == table(counts)
    assert _between(page, "conformance-departures") == departure_list(counts)


def test_every_suite_has_tests() -> None:
    empty = [name for name, count in suite_counts().items() if count.total == 0]
    assert not empty, f"suites without a conformance test: {empty}"


def _module_root(module: str, version: str) -> Path | None:
    go = shutil.which("go")
    if go is None:
        return None
    cache = subprocess.run(
        [go, "env", "GOMODCACHE"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "GOTOOLCHAIN": "local"},
    ).stdout.strip()
    root = Path(cache) / f"{module}@{version}"
    return root if root.is_dir() else None


@pytest.mark.parametrize("module_name", conformance_modules())
def test_each_mirrored_test_exists_in_karpenter(module_name: str) -> None:
    """Each ``@mirrors`` names a file of the Karpenter release and a test text found in it (the
    last part of the name, as written in the Ginkgo ``It``/``Entry``; an It whose text holds
    `` / `` is found by its last parts together)."""
    import importlib

    module = importlib.import_module(module_name)
    suite = module.SUITE
    repository = "aws" if suite.startswith("aws-") else "core"
    root = _module_root(*REPOSITORIES[repository])
    if root is None:
        reason = "Karpenter's module is not in the Go module cache (make tools fetches it)"
        unavailable(reason)
    missing = []
    for name in dir(module):
        mirrored = getattr(getattr(module, name), "karpenter_test", None)
        if not name.startswith("test_") or mirrored is None:
            continue
        source, title = mirrored
        path = root / source
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
        parts = title.split(" / ")
        # the It's own text is the last part, or the last few when it holds " / " itself
        leaves = [" / ".join(parts[-n:]) for n in range(1, len(parts) + 1)]
        if not any(f'"{leaf}"' in text for leaf in leaves):
            missing.append(f"{name}: {source}: {parts[-1]!r}")
    assert not missing, "mirrored tests not found in Karpenter:\n" + "\n".join(missing)
