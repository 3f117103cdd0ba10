"""The demo's exit verdict: a good image must end ``succeeded``, a faulty one ``rolled-back``
with nothing beyond the canary touched; anything else is an error a user sees (exit 1)."""

from __future__ import annotations

from typing import Any

from driftwave.demo.summary import unexpected


def outcome(state: str, **clusters: tuple[str, str]) -> dict[str, Any]:
    return {
        "rollout": {"state": state, "reason": "canary-1: gate failed"},
        "clusters": [{"name": n, "ring": r, "state": s} for n, (r, s) in clusters.items()],
    }


def test_a_good_image_that_succeeded_and_a_faulty_one_stopped_in_the_canary_are_expected() -> None:
    assert unexpected(outcome("succeeded", c=("canary", "converged")), faulty=False) is None
    stopped = outcome("rolled-back", c=("canary", "rolled-back"), d=("dev", "untouched"))
    assert unexpected(stopped, faulty=True) is None


def test_a_good_image_rolled_back_is_an_error_naming_the_state_and_the_reason() -> None:
    why = unexpected(outcome("rolled-back", c=("canary", "rolled-back")), faulty=False)
    assert why == (
        "the rollout of a good image ended rolled-back, not succeeded: canary-1: gate failed"
    )


def test_a_faulty_image_that_reached_dev_is_an_error_naming_the_clusters() -> None:
    leaked = outcome("rolled-back", c=("canary", "rolled-back"), d=("dev", "rolled-back"))
    assert unexpected(leaked, faulty=True) == (
        "the faulty image reached clusters beyond the canary: d"
    )
    assert unexpected(outcome("succeeded"), faulty=True) is not None
