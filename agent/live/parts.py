"""What building a live agent yields, and how it fails: the contract between the builder
(:func:`agent.live.build.build_live`, which wires the Kubernetes adapter, AWS and leader election)
and whoever serves the built agent (:func:`agent.server.live.serve_live`)."""

from __future__ import annotations

from typing import Protocol

from agent.live.runtime import LiveAgent


class BuildError(Exception):
    """The live agent could not be built: the kubeconfig, the cluster or AWS could not be
    reached or read at start. The message says which and what to do."""


class LiveParts(Protocol):
    """A built live agent and what keeps it connected (see :mod:`agent.live.build`)."""

    @property
    def agent(self) -> LiveAgent:
        """The runtime."""
        ...

    def start(self) -> None:
        """Start the informers and the leader election (before serving)."""
        ...

    def leading(self) -> bool:
        """Whether this replica holds the leader Lease (always, without leader election)."""
        ...

    def synced(self) -> bool:
        """Whether every informer has listed its kind once."""
        ...

    def close(self) -> None:
        """Release the Lease and stop the informers."""
        ...
