"""EC2NodeClass selector terms: AMIs (aliases, ids, names, tags, SSM parameters), subnets,
security groups, capacity reservations, and the placement group selector."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.agent.api.helpers import ec2nodeclass, nodeclass_ok, nodeclass_refused, with_field

AMI = "spec.amiSelectorTerms"
SUBNETS = "spec.subnetSelectorTerms"
GROUPS = "spec.securityGroupSelectorTerms"
RESERVATIONS = "spec.capacityReservationSelectorTerms"
PLACEMENT = "spec.placementGroupSelector"
EMPTY_TAG = "empty tag keys or values aren't supported"


def with_ami_terms(*terms: dict[str, Any], family: str | None = "AL2023") -> dict[str, Any]:
    data = ec2nodeclass(amiSelectorTerms=list(terms))
    return with_field(data, "spec.amiFamily", family) if family else data


def tags(count: int) -> dict[str, str]:
    return {f"tag-{i}": "*" for i in range(count)}


# --- AMI terms: alias ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "alias",
    [
        "al2@latest",
        "al2@v20240807",
        "al2023@latest",
        "al2023@v20240807",
        "bottlerocket@latest",
        "bottlerocket@v1.20.3",
        "windows2019@latest",
        "windows2022@latest",
        "windows2025@latest",
        "al2023@" + "v" * 23,
    ],
)
def test_valid_aliases_are_accepted(alias: str) -> None:
    term = nodeclass_ok(with_ami_terms({"alias": alias}, family=None)).spec.ami_selector_terms[0]
    assert term.alias_family == alias.partition("@")[0]


@pytest.mark.parametrize(
    "alias", ["al2023", "al2023@", "@latest", "al-2023@latest", "al 2@latest", ""]
)
def test_alias_not_of_the_form_family_at_version_is_refused(alias: str) -> None:
    nodeclass_refused(
        with_ami_terms({"alias": alias}, family=None),
        f"{AMI}[0].alias",
        "must match the format 'family@version'",
    )


@pytest.mark.parametrize(
    "alias", ["ubuntu@latest", "AL2023@latest", "windows@latest", "al1@latest"]
)
def test_alias_of_an_unsupported_family_is_refused(alias: str) -> None:
    issue = nodeclass_refused(
        with_ami_terms({"alias": alias}, family=None), f"{AMI}[0].alias", "is not supported"
    )
    for family in ("al2", "al2023", "bottlerocket", "windows2019", "windows2022", "windows2025"):
        assert family in issue.message


@pytest.mark.parametrize(
    "alias", ["windows2019@v20240807", "windows2022@2024.01.01", "windows2025@Latest"]
)
def test_windows_alias_other_than_latest_is_refused(alias: str) -> None:
    nodeclass_refused(
        with_ami_terms({"alias": alias}, family=None),
        f"{AMI}[0].alias",
        "windows families may only specify version 'latest'",
    )


@pytest.mark.parametrize("alias", ["al2023@latest\n", "al2023@v1\nx"], ids=["trailing", "inside"])
def test_alias_with_a_newline_is_refused(alias: str) -> None:
    nodeclass_refused(
        with_ami_terms({"alias": alias}, family=None),
        f"{AMI}[0].alias",
        "must match the format 'family@version'",
    )


def test_alias_longer_than_30_characters_is_refused() -> None:
    nodeclass_refused(
        with_ami_terms({"alias": "al2023@" + "v" * 24}, family=None),
        f"{AMI}[0].alias",
        "at most 30 characters",
    )


@pytest.mark.parametrize(
    "other",
    [{"tags": {"a": "b"}}, {"name": "my-ami"}, {"owner": "self"}],
    ids=["tags", "name", "owner"],
)
def test_alias_combined_with_another_field_is_refused(other: dict[str, Any]) -> None:
    (field,) = other
    nodeclass_refused(
        with_ami_terms({"alias": "al2023@latest", **other}, family=None),
        f"{AMI}[0].alias",
        f"'alias' cannot be combined with {field}",
        "mutually exclusive",
    )


def test_alias_with_ssm_parameter_is_accepted() -> None:
    nodeclass_ok(with_ami_terms({"alias": "al2023@latest", "ssmParameter": "/x"}, family=None))


@pytest.mark.parametrize(
    "others",
    [[{"id": "ami-0abc"}], [{"alias": "al2@latest"}], [{"tags": {"a": "b"}}, {"name": "x"}]],
    ids=["id", "alias", "two"],
)
def test_alias_term_with_other_terms_is_refused(others: list[dict[str, Any]]) -> None:
    nodeclass_refused(
        with_ami_terms({"alias": "al2023@latest"}, *others, family=None),
        AMI,
        "alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms",
    )


# --- AMI terms: id, name, owner, tags, ssmParameter ------------------------------------------


@pytest.mark.parametrize(
    "term",
    [
        {"id": "ami-0123456789abcdef0"},
        {"id": "ami-1", "ssmParameter": "/aws/service/x"},
        {"name": "amazon-eks-node-al2023-*", "owner": "amazon"},
        {"name": "my-ami"},
        {"tags": {"karpenter.sh/discovery": "demo"}, "owner": "123456789012"},
        {"tags": {"team": "*"}, "name": "x-*"},
        {"ssmParameter": "/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/recommended"},
        {"tags": tags(20)},
    ],
    ids=["id", "id-ssm", "name-owner", "name", "tags-owner", "tags-name", "ssm", "20-tags"],
)
def test_ami_terms_selecting_one_way_are_accepted(term: dict[str, Any]) -> None:
    nodeclass_ok(with_ami_terms(term))


@pytest.mark.parametrize(
    "other",
    [{"tags": {"a": "b"}}, {"name": "my-ami"}, {"owner": "self"}, {"alias": "al2023@latest"}],
    ids=["tags", "name", "owner", "alias"],
)
def test_id_combined_with_another_field_is_refused(other: dict[str, Any]) -> None:
    (field,) = other
    nodeclass_refused(
        with_ami_terms({"id": "ami-0abc", **other}),
        f"{AMI}[0].id",
        f"'id' cannot be combined with {field}",
        "mutually exclusive",
    )


@pytest.mark.parametrize("term", [{}, {"owner": "self"}], ids=["empty", "owner-only"])
def test_ami_term_selecting_nothing_is_refused(term: dict[str, Any]) -> None:
    issue = nodeclass_refused(with_ami_terms({"id": "ami-1"}, term), f"{AMI}[1]", "selects nothing")
    for field in ("tags", "id", "name", "alias", "ssmParameter"):
        assert field in issue.message


@pytest.mark.parametrize("ami_id", ["i-0abc", "AMI-0abc", "ami-", "ami-ABC"])
def test_ami_id_without_the_ami_pattern_is_refused(ami_id: str) -> None:
    nodeclass_refused(with_ami_terms({"id": ami_id}), f"{AMI}[0].id", "(pattern ami-[0-9a-z]+)")


def test_ami_id_pattern_is_unanchored_as_in_the_crd() -> None:
    nodeclass_ok(with_ami_terms({"id": "my-ami-0abc"}))


def test_thirty_ami_terms_are_accepted() -> None:
    terms = [{"id": f"ami-{i:04x}"} for i in range(30)]
    assert len(nodeclass_ok(with_ami_terms(*terms)).spec.ami_selector_terms) == 30


@pytest.mark.parametrize(("count", "fragment"), [(0, "at least 1"), (31, "at most 30")])
def test_ami_term_count_outside_1_to_30_is_refused(count: int, fragment: str) -> None:
    terms = [{"id": f"ami-{i:04x}"} for i in range(count)]
    nodeclass_refused(with_ami_terms(*terms), AMI, fragment)


# --- tags of every kind of term --------------------------------------------------------------

TERM_LISTS = [AMI, SUBNETS, GROUPS, RESERVATIONS]
TERM_IDS = [path.removeprefix("spec.") for path in TERM_LISTS]


def with_tag_term(path: str, term_tags: dict[str, Any]) -> dict[str, Any]:
    return with_field(ec2nodeclass(amiFamily="AL2023"), path, [{"tags": term_tags}])


@pytest.mark.parametrize("path", TERM_LISTS, ids=TERM_IDS)
def test_twenty_tags_with_wildcards_are_accepted(path: str) -> None:
    nodeclass_ok(with_tag_term(path, tags(20)))


@pytest.mark.parametrize("path", TERM_LISTS, ids=TERM_IDS)
def test_more_than_twenty_tags_are_refused(path: str) -> None:
    nodeclass_refused(with_tag_term(path, tags(21)), f"{path}[0].tags", "at most 20 tags")


@pytest.mark.parametrize("path", TERM_LISTS, ids=TERM_IDS)
@pytest.mark.parametrize("term_tags", [{"": "x"}, {"team": ""}], ids=["key", "value"])
def test_empty_tag_key_or_value_is_refused(path: str, term_tags: dict[str, str]) -> None:
    nodeclass_refused(with_tag_term(path, term_tags), f"{path}[0].tags", EMPTY_TAG)


@pytest.mark.parametrize("path", TERM_LISTS, ids=TERM_IDS)
def test_tag_values_must_be_strings(path: str) -> None:
    nodeclass_refused(with_tag_term(path, {"n": 1}), f"{path}[0].tags.n", "must be a string")


# --- subnet terms ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "terms",
    [
        [{"id": "subnet-0abc123"}],
        [{"tags": {"karpenter.sh/discovery": "demo"}}],
        [{"id": "subnet-1"}, {"id": "subnet-2"}, {"tags": {"a": "b"}}],
        [{"id": f"subnet-{i}"} for i in range(30)],
    ],
    ids=["id", "tags", "mixed", "30"],
)
def test_subnet_terms_are_accepted(terms: list[dict[str, Any]]) -> None:
    nodeclass_ok(ec2nodeclass(subnetSelectorTerms=terms))


@pytest.mark.parametrize(
    ("terms", "path", "fragment"),
    [
        ([{"id": "sg-0abc"}], f"{SUBNETS}[0].id", "(pattern subnet-[0-9a-z]+)"),
        ([{"id": "subnet-ABC"}], f"{SUBNETS}[0].id", "(pattern subnet-[0-9a-z]+)"),
        (
            [{"id": "subnet-1", "tags": {"a": "b"}}],
            f"{SUBNETS}[0].id",
            "'id' cannot be combined with tags",
        ),
        ([{}], f"{SUBNETS}[0]", "selects nothing: set one of tags, id"),
        ([{"name": "x"}], f"{SUBNETS}[0].name", "unknown field"),
        ([], SUBNETS, "at least 1"),
        ([{"id": f"subnet-{i}"} for i in range(31)], SUBNETS, "at most 30"),
    ],
    ids=["sg-id", "upper", "id-and-tags", "empty-term", "name", "none", "31"],
)
def test_invalid_subnet_terms_are_refused(
    terms: list[dict[str, Any]], path: str, fragment: str
) -> None:
    nodeclass_refused(ec2nodeclass(subnetSelectorTerms=terms), path, fragment)


def test_id_with_tags_in_one_of_several_subnet_terms_is_refused() -> None:
    # Karpenter's CEL rule (!self.all(...)) only fires when every term combines id and tags;
    # driftwave deliberately checks each term on its own (see common/selectors.py).
    terms = [{"tags": {"a": "b"}}, {"id": "subnet-1", "tags": {"a": "b"}}]
    nodeclass_refused(
        ec2nodeclass(subnetSelectorTerms=terms), f"{SUBNETS}[1].id", "'id' cannot be combined"
    )


# --- security group terms --------------------------------------------------------------------


@pytest.mark.parametrize(
    "terms",
    [
        [{"id": "sg-0abc123"}],
        [{"name": "eks-cluster-sg-demo"}],
        [{"tags": {"karpenter.sh/discovery": "demo"}}],
        [{"id": "sg-1"}, {"name": "x"}, {"tags": {"a": "b"}}],
    ],
    ids=["id", "name", "tags", "mixed"],
)
def test_security_group_terms_are_accepted(terms: list[dict[str, Any]]) -> None:
    nodeclass_ok(ec2nodeclass(securityGroupSelectorTerms=terms))


@pytest.mark.parametrize(
    ("terms", "path", "fragment"),
    [
        ([{"id": "subnet-0abc"}], f"{GROUPS}[0].id", "(pattern sg-[0-9a-z]+)"),
        ([{"id": "sg-1", "name": "x"}], f"{GROUPS}[0].id", "'id' cannot be combined with name"),
        (
            [{"id": "sg-1", "tags": {"a": "b"}}],
            f"{GROUPS}[0].id",
            "'id' cannot be combined with tags",
        ),
        (
            [{"name": "x", "tags": {"a": "b"}}],
            f"{GROUPS}[0].name",
            "'name' cannot be combined with tags",
        ),
        ([{}], f"{GROUPS}[0]", "selects nothing: set one of tags, id, name"),
        ([], GROUPS, "at least 1"),
        ([{"id": f"sg-{i}"} for i in range(31)], GROUPS, "at most 30"),
    ],
    ids=["subnet-id", "id-name", "id-tags", "name-tags", "empty-term", "none", "31"],
)
def test_invalid_security_group_terms_are_refused(
    terms: list[dict[str, Any]], path: str, fragment: str
) -> None:
    nodeclass_refused(ec2nodeclass(securityGroupSelectorTerms=terms), path, fragment)


# --- capacity reservation terms --------------------------------------------------------------


@pytest.mark.parametrize(
    "terms",
    [
        [],
        [{"id": "cr-0abc123"}],
        [{"tags": {"team": "ml"}}],
        [{"tags": {"team": "ml"}, "ownerID": "123456789012"}],
        [{"instanceMatchCriteria": "open"}],
        [{"instanceMatchCriteria": "targeted", "ownerID": "123456789012"}],
    ],
    ids=["none", "id", "tags", "tags-owner", "open", "targeted-owner"],
)
def test_capacity_reservation_terms_are_accepted(terms: list[dict[str, Any]]) -> None:
    nodeclass_ok(ec2nodeclass(capacityReservationSelectorTerms=terms))


@pytest.mark.parametrize(
    ("term", "sub", "fragment"),
    [
        ({"id": "cr_0abc"}, ".id", "(pattern ^cr-[0-9a-z]+$)"),
        ({"id": "cr-0ABC"}, ".id", "(pattern ^cr-[0-9a-z]+$)"),
        ({"id": "xcr-0abc"}, ".id", "(pattern ^cr-[0-9a-z]+$)"),
        ({"tags": {"a": "b"}, "ownerID": "1234"}, ".ownerID", "(pattern ^[0-9]{12}$)"),
        ({"id": "cr-1", "ownerID": "123456789012"}, ".id", "'id' cannot be combined with ownerID"),
        ({"id": "cr-1", "tags": {"a": "b"}}, ".id", "'id' cannot be combined with tags"),
        ({"id": "cr-1", "instanceMatchCriteria": "open"}, ".id", "'id' cannot be combined"),
        ({"instanceMatchCriteria": "closed"}, ".instanceMatchCriteria", "must be one of"),
        ({"ownerID": "123456789012"}, "", "selects nothing"),
        ({"ownerId": "123456789012", "id": "cr-1"}, ".ownerId", "unknown field"),
    ],
)
def test_invalid_capacity_reservation_terms_are_refused(
    term: dict[str, Any], sub: str, fragment: str
) -> None:
    nodeclass_refused(
        ec2nodeclass(capacityReservationSelectorTerms=[term]), f"{RESERVATIONS}[0]{sub}", fragment
    )


def test_more_than_thirty_capacity_reservation_terms_are_refused() -> None:
    terms = [{"id": f"cr-{i}"} for i in range(31)]
    nodeclass_refused(
        ec2nodeclass(capacityReservationSelectorTerms=terms), RESERVATIONS, "at most 30"
    )


# CRD patterns are Go regexps: '$' matches only at the very end, not before a trailing newline.
def test_capacity_reservation_id_with_trailing_newline_is_refused() -> None:
    data = ec2nodeclass(capacityReservationSelectorTerms=[{"id": "cr-0abc\n"}])
    nodeclass_refused(data, f"{RESERVATIONS}[0].id", "pattern")


# --- placement group selector ----------------------------------------------------------------


@pytest.mark.parametrize(
    "selector", [{"name": "my-cluster-pg"}, {"id": "pg-0abc123"}], ids=["name", "id"]
)
def test_placement_group_by_name_or_id_is_accepted(selector: dict[str, str]) -> None:
    nodeclass_ok(ec2nodeclass(placementGroupSelector=selector))


@pytest.mark.parametrize(
    ("selector", "path", "fragment"),
    [
        ({"name": "x", "id": "pg-1"}, PLACEMENT, "set exactly one of 'name' or 'id'"),
        ({}, PLACEMENT, "set exactly one of 'name' or 'id'"),
        ({"name": ""}, f"{PLACEMENT}.name", "at least 1 characters"),
        ({"id": "pg_1"}, f"{PLACEMENT}.id", "(pattern ^pg-[0-9a-z]+$)"),
        ({"id": "pg-ABC"}, f"{PLACEMENT}.id", "(pattern ^pg-[0-9a-z]+$)"),
        ({"arn": "x"}, f"{PLACEMENT}.arn", "unknown field"),
    ],
    ids=["both", "neither", "empty-name", "underscore", "upper", "unknown"],
)
def test_invalid_placement_group_selector_is_refused(
    selector: dict[str, str], path: str, fragment: str
) -> None:
    nodeclass_refused(ec2nodeclass(placementGroupSelector=selector), path, fragment)
