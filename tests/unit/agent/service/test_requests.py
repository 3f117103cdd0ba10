"""Bad requests are refused with the field and the rule, and change nothing."""

from __future__ import annotations

from typing import Any

import pytest

from agent.api.ec2nodeclass import EC2NodeClass
from agent.service import InvalidRequest

from .helpers import NEWEST, START, Rig, alias, rig

TERMS = [{"alias": f"al2023@{NEWEST}"}]


@pytest.fixture(scope="module")
def member() -> Rig:
    """One small member for every case here: none of them may change it."""
    return rig(nodes=2)


def _fields(member: Rig, request: Any, wave_id: str = "wave-1") -> list[tuple[str, str]]:
    with pytest.raises(InvalidRequest) as caught:
        member.service.apply_wave(wave_id, request)
    assert member.terms() == [{"alias": f"al2023@{START}"}]
    assert member.world.kubernetes_version == "1.30"
    return caught.value.fields


@pytest.mark.parametrize(
    ("request_body", "path", "words"),
    [
        ({"target": {}}, "target", "set exactly one of amiSelectorTerms or kubernetesVersion"),
        (
            {"target": {"amiSelectorTerms": TERMS, "kubernetesVersion": "1.31"}},
            "target",
            "exactly one",
        ),
        ({"target": {"amiSelectorTerms": []}}, "target.amiSelectorTerms", "at least 1"),
        (
            {"target": {"amiSelectorTerms": [{"id": "ami-1"}, {"id": "not-an-ami"}]}},
            "target.amiSelectorTerms[1].id",
            "pattern ami-[0-9a-z]+",
        ),
        (
            {"target": {"amiSelectorTerms": [{"alias": "ubuntu@latest"}]}},
            "target.amiSelectorTerms[0].alias",
            "alias family 'ubuntu' is not supported",
        ),
        (
            {"target": {"amiSelectorTerms": [*TERMS, {"id": "ami-1"}]}},
            "target.amiSelectorTerms",
            "alias term must be the only amiSelectorTerm",
        ),
        (
            {"target": {"amiSelectorTerms": [{"id": "ami-1", "name": "x"}]}},
            "target.amiSelectorTerms[0].id",
            "cannot be combined with name",
        ),
        ({"target": {"kubernetesVersion": "1.3"}}, "target.kubernetesVersion", "pattern"),
        ({"target": {"kubernetesVersion": 1.31}}, "target.kubernetesVersion", "must be a string"),
        ({"target": {"kubernetesVersion": "1.29"}}, "target.kubernetesVersion", "back"),
        ({"target": {"kubernetesVersion": "1.32"}}, "target.kubernetesVersion", "1.31 first"),
        ({"release": "r1"}, "target", "required field is missing"),
        ({"target": {"amiSelectorTerms": TERMS}, "colour": "blue"}, "colour", "unknown field"),
        (
            {"target": {"amiSelectorTerms": TERMS}, "nodeClasses": {"names": ["Not_A_Name"]}},
            "nodeClasses.names[0]",
            "DNS subdomain",
        ),
        (
            {"target": {"amiSelectorTerms": TERMS}, "nodeClasses": {"names": ["gpu"]}},
            "nodeClasses.names[0]",
            "no EC2NodeClass named 'gpu'",
        ),
        (
            {"target": {"amiSelectorTerms": TERMS}, "nodeClasses": {"matchLabels": {"a": "b"}}},
            "nodeClasses",
            "selects no EC2NodeClass",
        ),
        (["a", "list"], "", "must be a JSON object"),
    ],
)
def test_an_invalid_request_names_the_field_and_the_rule(
    member: Rig, request_body: Any, path: str, words: str
) -> None:
    fields = _fields(member, request_body)
    assert path in [p for p, _ in fields], fields
    assert any(words in message for p, message in fields if p == path), fields


@pytest.mark.parametrize("wave_id", ["Wave-1", "-wave", "wave-", "w" * 64, "a_b", ""])
def test_an_invalid_wave_id_is_refused(member: Rig, wave_id: str) -> None:
    assert _fields(member, alias(NEWEST), wave_id)[0][0] == "id"


def _second_class(member: Rig, name: str, **spec: Any) -> None:
    default = member.world.cluster.get(EC2NodeClass, "default")
    manifest = default.to_manifest()
    manifest.pop("status", None)
    manifest["metadata"] = {"name": name}
    manifest["spec"] = {**manifest["spec"], **spec}
    member.world.cluster.create(EC2NodeClass.model_validate(manifest, by_alias=True))


def test_a_change_that_would_break_an_ec2nodeclass_rule_names_the_class() -> None:
    r = rig(nodes=1)
    _second_class(r, "custom", amiFamily="AL2023", amiSelectorTerms=[{"tags": {"team": "x"}}])
    request = {"target": {"amiSelectorTerms": [{"alias": "al2@latest"}]}}
    fields = _fields(r, request)
    assert fields[0][0] == "target.amiSelectorTerms"
    assert "EC2NodeClass custom would be invalid: spec.amiFamily" in fields[0][1]


def test_a_kubernetes_version_target_must_cover_every_class() -> None:
    r = rig(nodes=1)
    _second_class(r, "other")
    request = {"target": {"kubernetesVersion": "1.31"}, "nodeClasses": {"names": ["default"]}}
    (field,) = _fields(r, request)
    assert field[0] == "nodeClasses"
    assert "leaves out other" in field[1]
