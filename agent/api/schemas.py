"""JSON Schemas of the manifest kinds, as driftwave validates them (for editors and docs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent.api.kinds import KARPENTER_KINDS
from common.kubemodel import KubeModel


def schema_for(model: type[KubeModel]) -> dict[str, Any]:
    """The JSON Schema (camelCase names, unknown fields refused) of one manifest model."""
    return model.model_json_schema(by_alias=True, mode="validation")


def write_schemas(folder: Path) -> list[Path]:
    """Write one schema file per Karpenter kind into ``folder``; return the paths written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for (api_version, kind), model in sorted(KARPENTER_KINDS.items()):
        group, _, version = api_version.partition("/")
        path = folder / f"{kind.lower()}.{group}.{version}.json"
        path.write_text(json.dumps(schema_for(model), indent=2, sort_keys=True) + "\n")
        written.append(path)
    return written
