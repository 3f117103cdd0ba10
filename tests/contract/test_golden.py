"""Today's agent answers, and today's fleet asks, exactly what the golden documents of this
release (``v0.2/``) say: a change of the wire without new golden documents fails here. Record
them again with ``python -m tests.contract.record --out tests/contract/v0.2`` (and say in the
change what a fleet or agent of the previous release makes of it: the other contract tests)."""

from __future__ import annotations

import pytest

from common.wire.version import VERSION
from tests.contract.golden import CURRENT, folder
from tests.contract.record import main


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The documents today's code records, by the command docs/development.md gives."""
    out = tmp_path_factory.mktemp("recorded")
    said: list[str] = []
    assert main(["--out", str(out)], echo=said.append) == 0
    files = sorted(out.glob("*.json"))
    assert sorted(said) == sorted(f"wrote {path}" for path in files)
    return {path.stem: path.read_text() for path in files}


def test_the_golden_documents_are_this_releases() -> None:
    assert VERSION.startswith(f"{CURRENT}.")


def test_every_golden_document_is_recorded_and_nothing_else(recorded: dict[str, str]) -> None:
    kept = {path.stem for path in folder(CURRENT).glob("*.json")}
    assert kept == set(recorded)


def test_todays_wire_equals_the_golden_documents(recorded: dict[str, str]) -> None:
    changed = [
        name
        for name, text in sorted(recorded.items())
        if (folder(CURRENT) / f"{name}.json").read_text() != text
    ]
    assert changed == [], (
        f"the wire changed: {', '.join(changed)}; record the golden documents again "
        f"(python -m tests.contract.record --out tests/contract/v{CURRENT})"
    )
