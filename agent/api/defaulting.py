"""The API server's defaulting of a Karpenter object: fill in what the CRD's schema defaults, as
the object would be stored (and as Karpenter then reads it).

The API server's structural defaulting: for each property of an object that is absent (or null
where the schema does not allow null) and has a default, the default is set; then every value
present, defaulted or not, is walked with its own schema, into array items and map values. The
schemas are the chart's CRDs (:mod:`agent.api.crds`), which carry Karpenter's defaults.
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

from agent.api.crds import crd
from agent.api.kinds import KARPENTER_KINDS


@cache
def _schema(kind: str) -> dict[str, Any]:
    for (api_version, name), model in KARPENTER_KINDS.items():
        if name == kind:
            definition = crd(api_version, name, model)
            schema: dict[str, Any] = definition["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
            return schema
    raise KeyError(f"no CRD for kind {kind!r}")


def _default(value: Any, schema: dict[str, Any]) -> None:
    if isinstance(value, dict):
        properties: dict[str, Any] = schema.get("properties", {})
        for key, prop in properties.items():
            if "default" not in prop:
                continue
            if key not in value or (value[key] is None and not prop.get("nullable")):
                value[key] = copy.deepcopy(prop["default"])
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            if key in properties:
                _default(item, properties[key])
            elif isinstance(extra, dict):
                _default(item, extra)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            _default(item, schema["items"])


def stored(kind: str, manifest: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``manifest`` (a NodePool, NodeClaim or EC2NodeClass) with its CRD's defaults
    filled in, as the API server stores it."""
    out = copy.deepcopy(manifest)
    _default(out, _schema(kind))
    return out


__all__ = ["stored"]
