"""When disruption passes run, and how much drift one pass decides.

The disruption controller's pacing (``DisruptionController.pacing``) says when passes run and
how much drift one pass decides:

* ``driftwave`` (the default): a pass runs when the cluster changes (and on the 10 s poll); drift
  decides every command the budgets allow in one pass, and the pass repeats at once while it
  acts (at most ``MAX_PASSES`` in a row at one instant);
* ``karpenter``: Karpenter's disruption controller (``pkg/controllers/disruption/controller.go``
  in Karpenter v1), a singleton reconciler that no cluster change wakes: drift decides one
  command per pass (the first candidate, in drift's order, whose pods all find a place); after a
  pass that started a command the next pass starts at once (Karpenter's ``RequeueImmediately``,
  1 ns; here the virtual clock's 1 us), after one that started nothing it comes after the
  polling period (``pollingPeriod``, 10 s), and while a NodeClaim has not launched the pass
  waits 1 s (Karpenter's cluster state is not synced then).
  A consolidation decision's validation period is waited out before the next pass, as Karpenter's
  pass waits in it. (Karpenter backs a pass that fails with an API error off exponentially; the
  passes here do not fail, so that rule has no counterpart.) Its speed is bounded by the cost of
  each pass (a snapshot of the cluster, and a scheduling simulation per drifted node tried: every
  one of them in a pass that finds nothing) and by Karpenter's rule that no candidate's pod may
  count on an uninitialized node: a second command within a round usually waits, its pods being
  placed on the replacement of the one before until that replacement initializes.

The timing itself is :class:`~agent.disruption.controller.DisruptionController`'s; here are the
pacings and their periods.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Literal, get_args

POLL = timedelta(seconds=10)
"""The polling period (Karpenter's ``pollingPeriod``)."""
HELD_REVISIT = timedelta(seconds=60)
VALIDATION = timedelta(seconds=15)
IMMEDIATELY = timedelta(microseconds=1)
"""Karpenter's ``RequeueImmediately`` (1 ns) at the virtual clock's resolution: the next pass is a
timer of its own, so the rest of the agent runs between two passes, as it would in Karpenter."""
SYNC_WAIT = timedelta(seconds=1)
"""Karpenter's pass waits this long while a NodeClaim has not launched (its cluster state is not
synced: where the NodeClaim's capacity will be is not known yet)."""
MAX_PASSES = 50
"""Passes in a row at one instant before the controller yields to the rest of the agent."""
Pacing = Literal["driftwave", "karpenter"]
"""When passes run and how much drift one pass decides (see the module docstring)."""
PACINGS: tuple[Pacing, ...] = get_args(Pacing)


class PacingError(ValueError):
    """A pacing that does not exist, or one set once the controller has started."""
