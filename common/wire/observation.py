"""What an agent observes of a wave's cluster now, with a verdict a machine reads.

``observed`` (in every wave document) says whether the cluster holds what the wave (or its
rollback) asked: ``holds``, and the verdict: ``state`` (what the fleet may conclude) and ``code``
(a stable identifier of the first thing that does not hold). ``reason`` is the same in words for
people; no program reads it. The states:

* ``holds``: everything the wave asked is on the cluster;
* ``regressed``: the selection itself is not there (the classes no longer carry it, the control
  plane is not at the target version, the terms resolve to no image): the cluster is not what
  the fleet asked, whatever the nodes do meanwhile;
* ``settling``: the selection is right but nodes are still being replaced, drifted or
  disrupted: worth looking again for a while;
* ``unknown``: never written by an agent: what a reader makes of a state or code it does not
  know (a newer agent's), or of an answer without a verdict (an agent of version 0.1, which
  writes ``holds`` and ``reason`` only). A step is never verified on it.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import Field, model_validator

from common.wire.base import Answer, tolerant


class VerdictState(StrEnum):
    """What the fleet may conclude from an observation (see the module docstring)."""

    SETTLING = "settling"
    REGRESSED = "regressed"
    HOLDS = "holds"
    UNKNOWN = "unknown"


class VerdictCode(StrEnum):
    """The first thing an observation finds not holding, as a stable identifier (``holds``
    when everything holds). Each code has one state (:data:`CODE_STATE`)."""

    HOLDS = "holds"
    SELECTION_MISSING = "selection-missing"
    """A class no longer carries the selection the wave (or its rollback) set, or is gone."""
    CONTROL_PLANE_VERSION = "control-plane-version"
    """The control plane does not run the wave's target version."""
    NO_IMAGE = "no-image"
    """A class's terms resolve to no image."""
    SELECTION_UNRESOLVED = "selection-unresolved"
    """A class's status has not caught up with its new terms yet."""
    NODES_NOT_ON_TARGET = "nodes-not-on-target"
    """Some nodes are not yet initialized on an image their classes select."""
    NODES_MISSING = "nodes-missing"
    """The wave's NodePools have no node while pods wait for one."""
    NODES_DRIFTED = "nodes-drifted"
    """Some nodes are drifted."""
    NODES_DISRUPTING = "nodes-disrupting"
    """Some nodes are being disrupted."""
    UNKNOWN = "unknown"
    """A reader's: a code it does not know, or an answer without one."""


CODE_STATE: dict[VerdictCode, VerdictState] = {
    VerdictCode.HOLDS: VerdictState.HOLDS,
    VerdictCode.SELECTION_MISSING: VerdictState.REGRESSED,
    VerdictCode.CONTROL_PLANE_VERSION: VerdictState.REGRESSED,
    VerdictCode.NO_IMAGE: VerdictState.REGRESSED,
    VerdictCode.SELECTION_UNRESOLVED: VerdictState.SETTLING,
    VerdictCode.NODES_NOT_ON_TARGET: VerdictState.SETTLING,
    VerdictCode.NODES_MISSING: VerdictState.SETTLING,
    VerdictCode.NODES_DRIFTED: VerdictState.SETTLING,
    VerdictCode.NODES_DISRUPTING: VerdictState.SETTLING,
    VerdictCode.UNKNOWN: VerdictState.UNKNOWN,
}
"""The state each code means (an agent writes both, so a reader that does not know a newer
code still knows its state)."""


class Expected(StrEnum):
    """What a wave's classes should carry: the wave's ``target``, or, once it is rolled back,
    the ``previous`` selection its rollback put back (``unknown``: a reader's, for a value it
    does not know)."""

    TARGET = "target"
    PREVIOUS = "previous"
    UNKNOWN = "unknown"


class Observation(Answer):
    """What the cluster shows of a wave now, read afresh on every request."""

    expected: Annotated[Expected, tolerant(Expected, Expected.UNKNOWN)] = Field(
        description="What the wave's classes should carry: the wave's target, or, once it is "
        "rolled back, the previous selection its rollback put back."
    )
    holds: bool = Field(
        description="Every class carries the expected selection, the control plane the target "
        "version (if any), and every node of the wave's NodePools is initialized on an image "
        "its class selects, none drifted or being disrupted."
    )
    state: Annotated[VerdictState, tolerant(VerdictState, VerdictState.UNKNOWN)] = Field(
        description="The verdict: holds, regressed (the selection itself is not there), "
        "settling (nodes are still being replaced), or, for a reader, unknown."
    )
    code: Annotated[VerdictCode, tolerant(VerdictCode, VerdictCode.UNKNOWN)] = Field(
        description="The first thing that does not hold, as a stable identifier (holds when "
        "everything holds)."
    )
    reason: str = Field(description="What does not hold, in words (empty when it holds).")
    kubernetes_version: str
    images: list[str] = Field(description="The images the wave's classes select now.")
    nodes: int
    on_expected: int
    drifted: int
    disrupting: int
    launch_failures: int = Field(
        description="NodeClaims of the wave's NodePools deleted before launching, since the "
        "wave was applied."
    )
    registration_failures: int = Field(
        description="NodeClaims of the wave's NodePools launched but deleted before they "
        "initialized, since the wave was applied."
    )
    at: str = Field(description="When it was observed (RFC 3339, the agent's clock).")

    @model_validator(mode="before")
    @classmethod
    def _verdict_of_older_agents(cls, data: Any) -> Any:
        """An answer without a verdict (an agent of version 0.1): ``holds`` when it holds,
        ``unknown`` otherwise (never verified, never a regression)."""
        if isinstance(data, dict) and ("state" not in data or "code" not in data):
            data = dict(data)
            held = data.get("holds") is True
            data.setdefault("state", VerdictState.HOLDS if held else VerdictState.UNKNOWN)
            data.setdefault("code", VerdictCode.HOLDS if held else VerdictCode.UNKNOWN)
        return data
