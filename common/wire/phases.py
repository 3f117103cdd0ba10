"""Where a wave stands on its cluster: the ``phase`` of the wave document and of its history."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from common.wire.base import tolerant


class Phase(StrEnum):
    """A wave's phase (the agent's ``agent.service.waves`` says how a wave moves between them).

    ``unknown`` is never written by an agent: it is what a reader makes of a phase it does not
    know (a newer agent's), which the fleet treats as a wave still under way."""

    PROGRESSING = "progressing"
    CONVERGED = "converged"
    FAILED = "failed"
    ROLLING_BACK = "rolling-back"
    ROLLED_BACK = "rolled-back"
    ROLLBACK_FAILED = "rollback-failed"
    UNKNOWN = "unknown"


MOVING: frozenset[Phase] = frozenset({Phase.PROGRESSING, Phase.ROLLING_BACK})
"""Phases in which nodes are being replaced (the wave is under way)."""
ROLLED: frozenset[Phase] = frozenset({Phase.ROLLING_BACK, Phase.ROLLED_BACK, Phase.ROLLBACK_FAILED})
"""Phases after a rollback started."""
FINISHED: frozenset[Phase] = frozenset(
    {Phase.CONVERGED, Phase.FAILED, Phase.ROLLED_BACK, Phase.ROLLBACK_FAILED}
)
"""Phases in which a wave stopped moving."""

ReadPhase = Annotated[Phase, tolerant(Phase, Phase.UNKNOWN)]
"""A phase as a reader takes it: one it does not know is ``unknown``."""
