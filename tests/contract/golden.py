"""The golden documents of each version (``tests/contract/v<version>/``) and the previous
version's frozen readers, for the contract tests."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
PREVIOUS = "0.1"
"""The release before this one: its documents are replayed against today's fleet, and today's
against its readers."""
CURRENT = "0.2"


def folder(version: str) -> Path:
    """Where a version's golden documents are."""
    return HERE / f"v{version}"


def documents(version: str, kind: str) -> dict[str, Any]:
    """A version's golden documents of ``kind`` (``request`` or ``answer``) by name."""
    found = {
        path.stem: json.loads(path.read_text())
        for path in sorted(folder(version).glob(f"{kind}-*.json"))
    }
    if not found:
        raise AssertionError(f"no {kind} documents in {folder(version)}")
    return found


def waves(version: str) -> dict[str, dict[str, Any]]:
    """A version's wave documents (the answers that carry a ``phase``) by name."""
    return {n: d for n, d in documents(version, "answer").items() if n.startswith("answer-wave-")}


def previous_readers() -> ModuleType:
    """The previous version's frozen readers (``v0.1/readers.py``)."""
    name = "tests.contract.readers_v0_1"
    if name in sys.modules:
        return sys.modules[name]
    path = folder(PREVIOUS) / "readers.py"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise AssertionError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses and models look their module up
    spec.loader.exec_module(module)
    return module
