"""The wire's version facts: the release constant equals pyproject's version, the
compatibility range (one minor either side, same major; no version is 0.1; an unreadable one is
refused, naming both versions and the range), and the identity an agent reports, read
tolerantly."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from common.wire.version import (
    CAPABILITIES,
    UNVERSIONED_CAPABILITIES,
    VERSION,
    AgentIdentity,
    Capability,
    RefusalCode,
    capabilities_of,
    drivable,
    identity,
    read_identity,
    supported,
)

ROOT = Path(__file__).resolve().parents[3]


def test_the_release_constant_is_pyprojects_version() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["version"] == VERSION


@pytest.mark.parametrize(
    ("fleet", "agent"),
    [
        ("0.2.0", None),
        ("0.2.0", "0.1.0"),
        ("0.2.0", "0.1.9"),
        ("0.2.0", "0.2.7"),
        ("0.2.0", "0.3.5"),
        ("0.2.0", "0.3.0-rc.1"),
        ("1.0.0", "1.1.2"),
        ("1.4.1", "1.3.0"),
    ],
)
def test_the_same_major_and_one_minor_either_side_are_driven(fleet: str, agent: str | None) -> None:
    assert drivable(agent, fleet) is None


@pytest.mark.parametrize(
    ("fleet", "agent", "code"),
    [
        ("0.2.0", "0.0.1", RefusalCode.TOO_OLD),
        ("0.2.0", "0.4.0", RefusalCode.TOO_NEW),
        ("0.2.0", "0.9.0", RefusalCode.TOO_NEW),
        ("0.2.0", "1.2.0", RefusalCode.TOO_NEW),
        ("1.0.0", "0.9.0", RefusalCode.TOO_OLD),
        ("0.4.0", None, RefusalCode.TOO_OLD),
        ("0.2.0", "0.2", RefusalCode.UNREADABLE),
        ("0.2.0", "", RefusalCode.UNREADABLE),
        ("0.2.0", "v0.2.0", RefusalCode.UNREADABLE),
    ],
)
def test_others_are_refused_with_a_code_and_both_versions(
    fleet: str, agent: str | None, code: RefusalCode
) -> None:
    refused = drivable(agent, fleet)
    assert refused is not None
    assert refused.code is code
    assert f"this fleet ({fleet}) drives agents {supported(fleet)}" in refused.reason
    shown = "0.1.0 (it reports no version)" if agent is None else repr(agent)
    assert shown.strip("'") in refused.reason


def test_the_range_is_said_as_people_read_it() -> None:
    assert supported("0.2.0") == "0.1.x to 0.3.x"
    assert supported("1.0.3") == "1.0.x to 1.1.x"
    with pytest.raises(ValueError, match="not a semantic version"):
        drivable("0.2.0", "two")


def test_an_agent_reports_this_release_and_its_capabilities() -> None:
    reported = identity().model_dump(mode="json")
    assert reported == {
        "version": VERSION,
        "apiVersion": "v1",
        "capabilities": [c.value for c in CAPABILITIES],
    }
    assert read_identity(reported) == identity()


def test_a_newer_agents_identity_is_read_without_what_this_release_does_not_know() -> None:
    newer = {
        "version": "0.3.1",
        "apiVersion": "v1",
        "capabilities": ["verdict-codes", "teleport"],
        "buildDate": "2027-01-01",
    }
    read = read_identity(newer)
    assert read == AgentIdentity(
        version="0.3.1", api_version="v1", capabilities=[Capability.VERDICT_CODES]
    )
    assert capabilities_of(read) == {Capability.VERDICT_CODES}


def test_an_agent_without_an_identity_is_release_0_1_and_a_broken_one_is_unreadable() -> None:
    assert read_identity(None) is None
    assert capabilities_of(None) == UNVERSIONED_CAPABILITIES
    broken = read_identity({"version": 2})
    assert broken is not None
    refused = drivable(broken.version)
    assert refused is not None
    assert refused.code is RefusalCode.UNREADABLE
