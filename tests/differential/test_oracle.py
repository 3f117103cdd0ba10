"""The oracle itself: a request it cannot answer is an error answer, and it keeps serving."""

from __future__ import annotations

import pytest

from tests.differential.objects import nodepool
from tests.support.oracle import KarpenterOracle, OracleError


@pytest.mark.parametrize(
    ("op", "fields", "message"),
    [
        ("no-such-op", {}, 'unknown op "no-such-op"'),
        ("nodepool-hash", {"nodePool": None}, "a NodePool is required"),
        ("nodepool-hash", {"nodePool": nodepool(), "typo": 1}, 'unknown field "typo"'),
        ("allowed-disruptions", {"nodePool": nodepool(), "reason": "Drifted"}, "now is required"),
    ],
)
def test_a_bad_request_is_answered_with_an_error(
    karpenter_oracle: KarpenterOracle, op: str, fields: dict[str, object], message: str
) -> None:
    with pytest.raises(OracleError, match=message):
        karpenter_oracle.ask(op, **fields)
    assert karpenter_oracle.ask("nodepool-hash", nodePool=nodepool())["hashVersion"] == "v3"
