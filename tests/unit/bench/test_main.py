"""``python -m bench``: its help names every benchmark; an unknown name is refused."""

from __future__ import annotations

import pytest

from bench.__main__ import BENCHMARKS, main


@pytest.mark.parametrize("flag", ["-h", "--help"])
def test_help_names_every_benchmark_and_runs_none(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([flag]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: python -m bench")
    for name in BENCHMARKS:
        assert name in out
    assert "==" not in out  # no benchmark ran


def test_an_unknown_benchmark_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["nope"]) == 1
    assert "unknown benchmark nope" in capsys.readouterr().err
