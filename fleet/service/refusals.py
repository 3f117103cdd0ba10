"""The typed refusals of the rollout commands: a command the rollouts as they stand do not
allow (:class:`CommandRefused` and its kinds) or that the actor may not give
(:class:`CommandForbidden`). A refused command changes nothing; the message says why."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


class CommandRefused(ValueError):
    """A command does not apply to the rollout as it stands (the message says why; ``code``
    and ``fields``, (path, message) pairs, say it for scripts)."""

    code = "command_refused"

    @property
    def fields(self) -> list[tuple[str, str]]:
        """The fields at fault (none by default)."""
        return []


class CommandForbidden(PermissionError):
    """The actor may not give this command (e.g. approve a ring outside its token's rings)."""


@dataclass(frozen=True)
class Hold:
    """A rollout holding clusters another rollout would touch."""

    rollout: str
    release: str
    state: str
    clusters: tuple[str, ...]
    """The clusters both would touch (sorted)."""

    def describe(self) -> str:
        """``rollout ro-x (release r, running) on clusters a, b``."""
        return (
            f"rollout {self.rollout} (release {self.release}, {self.state}) "
            f"on cluster(s) {', '.join(self.clusters)}"
        )


class ClustersHeld(CommandRefused):
    """A rollout would touch clusters (EC2NodeClasses of clusters) that live rollouts hold."""

    code = "clusters_held"

    def __init__(
        self, release: str, holds: Sequence[Hold], *, what: str = "", hint: str = ""
    ) -> None:
        self.release = release
        self.holds = list(holds)
        held = "; ".join(hold.describe() for hold in self.holds)
        hint = hint or (
            'wait for it to end or abort it, or start with --queue (API: "queue": true) to run '
            "once it ends"
        )
        super().__init__(
            f"{what or 'release ' + release}: its clusters are held by live {held} (rule: one "
            f"live rollout per cluster; {hint})"
        )

    @property
    def fields(self) -> list[tuple[str, str]]:
        """One entry per holding rollout: ``rollouts.ID``, the clusters it holds."""
        return [(f"rollouts.{h.rollout}", ", ".join(h.clusters)) for h in self.holds]


class ReleaseLive(CommandRefused):
    """The release already has a live or queued rollout."""

    code = "release_live"

    def __init__(self, release: str, rollout: str, state: str) -> None:
        self.release = release
        self.rollout = rollout
        self.state = state
        super().__init__(
            f"release {release} is already being rolled out by rollout {rollout} ({state}) "
            "(rule: one live or queued rollout per release, --queue included; wait for it to "
            "end or abort it)"
        )

    @property
    def fields(self) -> list[tuple[str, str]]:
        """The release's live rollout."""
        return [("metadata.name", f"rollout {self.rollout} ({self.state}) rolls it")]


@dataclass(frozen=True)
class Unheld:
    """A cluster of an earlier ring that no longer holds the target its step was verified on."""

    cluster: str
    ring: str
    text: str
    """How it stands now, with the observation's age (``regressed: ... (observed 8 s ago)``)."""


class ClustersRegressed(CommandRefused):
    """A ring cannot be approved while a cluster of an earlier ring no longer holds the target
    it was verified on (the cluster is the record, not the step's history)."""

    code = "cluster_regressed"

    def __init__(self, rollout: str, ring: str, unheld: Sequence[Unheld]) -> None:
        self.rollout = rollout
        self.ring = ring
        self.unheld = list(unheld)
        named = "; ".join(f"{u.cluster} (ring {u.ring}): {u.text}" for u in self.unheld)
        super().__init__(
            f"rollout {rollout}: ring {ring} cannot be approved while an earlier ring's cluster "
            f"no longer holds its verified target: {named} (rule: the cluster is the record; "
            "roll the rollout back, or wait until the cluster runs the target again)"
        )

    @property
    def fields(self) -> list[tuple[str, str]]:
        """One entry per cluster: ``clusters.NAME``, how it stands now."""
        return [(f"clusters.{u.cluster}", u.text) for u in self.unheld]
