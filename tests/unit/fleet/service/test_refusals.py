"""The operator commands' rules in every rollout state: a command that would do nothing says
"already ..." (never the state machine's "it cannot become aborted (from aborted: ...)"), one
the state refuses says why, and the commands raise the first as :class:`AlreadyDone`."""

from __future__ import annotations

from typing import get_args

import pytest

from fleet.domain.machine import TERMINAL, RolloutState
from fleet.service.commands.refusals import Command, Standing, already, refusal

COMMANDS: tuple[Command, ...] = get_args(Command)
APPLIED = (("verified", None),)
"""One step the wave reached: what a rollback would put back."""


def standing(state: RolloutState, *, paused: bool = False) -> Standing:
    waiting = "prod" if state is RolloutState.AWAITING_APPROVAL else None
    return Standing("ro-1", state, paused, waiting, APPLIED)


@pytest.mark.parametrize("paused", [False, True])
@pytest.mark.parametrize("state", list(RolloutState))
@pytest.mark.parametrize("command", COMMANDS)
def test_no_refusal_speaks_the_state_machine(
    command: Command, state: RolloutState, paused: bool
) -> None:
    why = refusal(command, standing(state, paused=paused), ring="prod")
    if why is not None:
        assert why.startswith("rollout ro-1 ")
        assert "cannot become" not in why
        assert "(from " not in why


@pytest.mark.parametrize(
    ("command", "state", "paused", "words"),
    [
        ("abort", RolloutState.ABORTED, False, "rollout ro-1 is already aborted"),
        (
            "abort",
            RolloutState.SUCCEEDED,
            False,
            "rollout ro-1 has already ended (succeeded): there is nothing to abort",
        ),
        ("pause", RolloutState.SOAKING, True, "rollout ro-1 is already paused"),
        ("resume", RolloutState.RUNNING, False, "rollout ro-1 is already running (not paused)"),
        (
            "resume",
            RolloutState.SOAKING,
            False,
            "rollout ro-1 is already running (soaking, not paused)",
        ),
        ("rollback", RolloutState.ROLLING_BACK, False, "rollout ro-1 is already rolling back"),
        ("rollback", RolloutState.ROLLED_BACK, False, "rollout ro-1 is already rolled back"),
    ],
)
def test_a_no_op_says_already(
    command: Command, state: RolloutState, paused: bool, words: str
) -> None:
    here = standing(state, paused=paused)
    assert already(command, here) == words
    assert refusal(command, here) == words


@pytest.mark.parametrize(
    ("command", "state", "words"),
    [
        ("abort", RolloutState.ROLLING_BACK, "it cannot be aborted (a rollback runs to its end)"),
        ("rollback", RolloutState.PLANNED, "nothing was rolled out yet"),
        ("pause", RolloutState.HALTED, "has ended (halted): there is nothing to pause"),
        ("resume", RolloutState.ABORTED, "has ended (aborted): there is nothing to resume"),
    ],
)
def test_a_refusal_that_is_not_a_no_op_says_why(
    command: Command, state: RolloutState, words: str
) -> None:
    here = standing(state, paused=command == "resume")
    assert already(command, here) is None
    why = refusal(command, here)
    assert why is not None
    assert words in why


@pytest.mark.parametrize(
    "state", sorted(set(RolloutState) - TERMINAL - {RolloutState.ROLLING_BACK})
)
def test_abort_is_allowed_until_the_rollout_ends(state: RolloutState) -> None:
    assert refusal("abort", standing(state)) is None
