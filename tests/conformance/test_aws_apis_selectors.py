"""Conformance of an EC2NodeClass's selector terms (subnets, security groups, capacity
reservations, AMIs) to the AWS provider's CEL validation tests.

A Go selector term with an empty ``tags`` map is sent without it (``omitempty``), so the
provider's "no tag map values" cases send an empty term, as here.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conformance.karpenter import mirrors
from tests.conformance.test_aws_apis import nodeclass, paths
from tests.conformance.test_core_apis import Admission, api

SUITE = "aws-apis"
SOURCE = "pkg/apis/v1/ec2nodeclass_validation_cel_test.go"
SUBNETS = "CEL/Validation / SubnetSelectorTerms / "
GROUPS = "CEL/Validation / SecurityGroupSelectorTerms / "
RESERVATIONS = "CEL/Validation / CapacityReservationSelectorTerms / "
AMIS = "CEL/Validation / AMISelectorTerms / "
TAGGED = {"tags": {"test": "testvalue"}}
LAST_INVALID = [
    {"tags": {"test": "testvalue"}},
    {"tags": {"test2": "testvalue2"}},
    {"tags": {"test3": "testvalue3"}},
    {"tags": {"": "testvalue4"}},
]
"""Four terms of which only the last is invalid (an empty tag key)."""

__all__ = ["api"]


def terms(field: str, *items: dict[str, Any]) -> dict[str, Any]:
    """The provider's EC2NodeClass with ``field`` set to these terms."""
    return nodeclass(**{field: list(items)})


def stored_terms(api: Admission, field: str, *items: dict[str, Any]) -> Any:
    """Admit a class with these terms; the terms as stored."""
    return api.admitted(terms(field, *items))["spec"][field]


def exclusive(found: list[Any], field: str) -> None:
    """driftwave refuses the first term of ``field`` for a field its other fields exclude."""
    assert found, "accepted"
    assert all(path.startswith(f"spec.{field}[0]") for path in paths(found)), paths(found)
    assert any("mutually exclusive" in issue.message for issue in found), found


# --- SubnetSelectorTerms ---------------------------------------------------------------------

SUBNET = "subnetSelectorTerms"


@mirrors(SOURCE, SUBNETS + "should succeed with a valid subnet selector on tags")
def test_subnet_on_tags(api: Admission) -> None:
    assert stored_terms(api, SUBNET, TAGGED) == [TAGGED]


@mirrors(SOURCE, SUBNETS + "should succeed with a valid subnet selector on id")
def test_subnet_on_id(api: Admission) -> None:
    assert stored_terms(api, SUBNET, {"id": "subnet-12345749"}) == [{"id": "subnet-12345749"}]


@mirrors(SOURCE, SUBNETS + "should fail when subnet selector terms is set to nil")
def test_subnet_terms_missing(api: Admission) -> None:
    assert paths(api.refused(nodeclass(subnetSelectorTerms=None))) == [f"spec.{SUBNET}"]


@mirrors(SOURCE, SUBNETS + "should fail when no subnet selector terms exist")
def test_subnet_terms_empty(api: Admission) -> None:
    assert paths(api.refused(terms(SUBNET))) == [f"spec.{SUBNET}"]


@mirrors(SOURCE, SUBNETS + "should fail when a subnet selector term has no values")
def test_subnet_term_without_values(api: Admission) -> None:
    assert paths(api.refused(terms(SUBNET, {}))) == [f"spec.{SUBNET}[0]"]


@mirrors(SOURCE, SUBNETS + "should fail when a subnet selector term has no tag map values")
def test_subnet_term_without_tag_values(api: Admission) -> None:
    assert paths(api.refused(terms(SUBNET, {}))) == [f"spec.{SUBNET}[0]"]


@mirrors(
    SOURCE, SUBNETS + "should fail when a subnet selector term has a tag map key that is empty"
)
def test_subnet_tag_empty_value(api: Admission) -> None:
    found = api.refused(terms(SUBNET, {"tags": {"test": ""}}))
    assert paths(found) == [f"spec.{SUBNET}[0].tags"]


@mirrors(
    SOURCE, SUBNETS + "should fail when a subnet selector term has a tag map value that is empty"
)
def test_subnet_tag_empty_key(api: Admission) -> None:
    found = api.refused(terms(SUBNET, {"tags": {"": "testvalue"}}))
    assert paths(found) == [f"spec.{SUBNET}[0].tags"]


@mirrors(SOURCE, SUBNETS + "should fail when the last subnet selector is invalid")
def test_subnet_last_term_invalid(api: Admission) -> None:
    assert paths(api.refused(terms(SUBNET, *LAST_INVALID))) == [f"spec.{SUBNET}[3].tags"]


@mirrors(SOURCE, SUBNETS + "should fail when specifying id with tags")
def test_subnet_id_with_tags(api: Admission) -> None:
    found = api.refused(terms(SUBNET, {"id": "subnet-12345749", **TAGGED}))
    exclusive(found, SUBNET)


# --- SecurityGroupSelectorTerms --------------------------------------------------------------

GROUP = "securityGroupSelectorTerms"


@mirrors(SOURCE, GROUPS + "should succeed with a valid security group selector on tags")
def test_group_on_tags(api: Admission) -> None:
    assert stored_terms(api, GROUP, TAGGED) == [TAGGED]


@mirrors(SOURCE, GROUPS + "should succeed with a valid security group selector on id")
def test_group_on_id(api: Admission) -> None:
    assert stored_terms(api, GROUP, {"id": "sg-12345749"}) == [{"id": "sg-12345749"}]


@mirrors(SOURCE, GROUPS + "should succeed with a valid security group selector on name")
def test_group_on_name(api: Admission) -> None:
    assert stored_terms(api, GROUP, {"name": "testname"}) == [{"name": "testname"}]


@mirrors(SOURCE, GROUPS + "should fail when security group selector terms is set to nil")
def test_group_terms_missing(api: Admission) -> None:
    assert paths(api.refused(nodeclass(securityGroupSelectorTerms=None))) == [f"spec.{GROUP}"]


@mirrors(SOURCE, GROUPS + "should fail when no security group selector terms exist")
def test_group_terms_empty(api: Admission) -> None:
    assert paths(api.refused(terms(GROUP))) == [f"spec.{GROUP}"]


@mirrors(SOURCE, GROUPS + "should fail when a security group selector term has no values")
def test_group_term_without_values(api: Admission) -> None:
    assert paths(api.refused(terms(GROUP, {}))) == [f"spec.{GROUP}[0]"]


@mirrors(SOURCE, GROUPS + "should fail when a security group selector term has no tag map values")
def test_group_term_without_tag_values(api: Admission) -> None:
    assert paths(api.refused(terms(GROUP, {}))) == [f"spec.{GROUP}[0]"]


@mirrors(
    SOURCE,
    GROUPS + "should fail when a security group selector term has a tag map key that is empty",
)
def test_group_tag_empty_value(api: Admission) -> None:
    assert paths(api.refused(terms(GROUP, {"tags": {"test": ""}}))) == [f"spec.{GROUP}[0].tags"]


@mirrors(
    SOURCE,
    GROUPS + "should fail when a security group selector term has a tag map value that is empty",
)
def test_group_tag_empty_key(api: Admission) -> None:
    found = api.refused(terms(GROUP, {"tags": {"": "testvalue"}}))
    assert paths(found) == [f"spec.{GROUP}[0].tags"]


@mirrors(SOURCE, GROUPS + "should fail when the last security group selector is invalid")
def test_group_last_term_invalid(api: Admission) -> None:
    assert paths(api.refused(terms(GROUP, *LAST_INVALID))) == [f"spec.{GROUP}[3].tags"]


@mirrors(SOURCE, GROUPS + "should fail when specifying id with tags")
def test_group_id_with_tags(api: Admission) -> None:
    exclusive(api.refused(terms(GROUP, {"id": "sg-12345749", **TAGGED})), GROUP)


@mirrors(SOURCE, GROUPS + "should fail when specifying id with name")
def test_group_id_with_name(api: Admission) -> None:
    found = api.refused(terms(GROUP, {"id": "sg-12345749", "name": "my-security-group"}))
    exclusive(found, GROUP)


@mirrors(SOURCE, GROUPS + "should fail when specifying name with tags")
def test_group_name_with_tags(api: Admission) -> None:
    found = api.refused(terms(GROUP, {"name": "my-security-group", **TAGGED}))
    exclusive(found, GROUP)


# --- CapacityReservationSelectorTerms --------------------------------------------------------

RESERVATION = "capacityReservationSelectorTerms"
OWNER = "012345678901"


@mirrors(SOURCE, RESERVATIONS + "should succeed with a valid capacity reservation selector on tags")
def test_reservation_on_tags(api: Admission) -> None:
    assert stored_terms(api, RESERVATION, TAGGED) == [TAGGED]


@mirrors(SOURCE, RESERVATIONS + "should succeed with a valid capacity reservation selector on id")
def test_reservation_on_id(api: Admission) -> None:
    assert stored_terms(api, RESERVATION, {"id": "cr-12345749"}) == [{"id": "cr-12345749"}]


@mirrors(SOURCE, RESERVATIONS + "should succeed for a valid ownerID")
def test_reservation_owner(api: Admission) -> None:
    term = {"ownerID": OWNER, **TAGGED}
    assert stored_terms(api, RESERVATION, term) == [term]


@mirrors(
    SOURCE, RESERVATIONS + "should fail with a capacity reservation selector on a malformed id"
)
def test_reservation_malformed_id(api: Admission) -> None:
    found = api.refused(terms(RESERVATION, {"id": "r-12345749"}))
    assert paths(found) == [f"spec.{RESERVATION}[0].id"]


@mirrors(SOURCE, RESERVATIONS + "should succeed when capacity group selector terms is set to nil")
def test_reservation_terms_missing(api: Admission) -> None:
    assert RESERVATION not in api.admitted(nodeclass())["spec"]


@mirrors(
    SOURCE, RESERVATIONS + "should fail when a capacity reservation selector term has no values"
)
def test_reservation_term_without_values(api: Admission) -> None:
    assert paths(api.refused(terms(RESERVATION, {}))) == [f"spec.{RESERVATION}[0]"]


@mirrors(
    SOURCE,
    RESERVATIONS + "should fail when a capacity reservation selector term has no tag map values",
)
def test_reservation_term_without_tag_values(api: Admission) -> None:
    assert paths(api.refused(terms(RESERVATION, {}))) == [f"spec.{RESERVATION}[0]"]


@mirrors(
    SOURCE,
    RESERVATIONS
    + "should fail when a capacity reservation selector term has a tag map key that is empty",
)
def test_reservation_tag_empty_value(api: Admission) -> None:
    found = api.refused(terms(RESERVATION, {"tags": {"test": ""}}))
    assert paths(found) == [f"spec.{RESERVATION}[0].tags"]


@mirrors(
    SOURCE,
    RESERVATIONS
    + "should fail when a capacity reservation selector term has a tag map value that is empty",
)
def test_reservation_tag_empty_key(api: Admission) -> None:
    found = api.refused(terms(RESERVATION, {"tags": {"": "testvalue"}}))
    assert paths(found) == [f"spec.{RESERVATION}[0].tags"]


@mirrors(
    SOURCE, RESERVATIONS + "should fail when the last capacity reservation selector is invalid"
)
def test_reservation_last_term_invalid(api: Admission) -> None:
    found = api.refused(terms(RESERVATION, *LAST_INVALID))
    assert paths(found) == [f"spec.{RESERVATION}[3].tags"]


@mirrors(SOURCE, RESERVATIONS + "should fail when specifying id with tags in a single term")
def test_reservation_id_with_tags(api: Admission) -> None:
    found = api.refused(terms(RESERVATION, {"id": "cr-12345749", **TAGGED}))
    exclusive(found, RESERVATION)


@mirrors(SOURCE, RESERVATIONS + "should fail when specifying id with ownerID in a single term")
def test_reservation_id_with_owner(api: Admission) -> None:
    found = api.refused(terms(RESERVATION, {"ownerID": OWNER, "id": "cr-12345749"}))
    exclusive(found, RESERVATION)


@mirrors(SOURCE, RESERVATIONS + "should fail when the ownerID is malformed")
def test_reservation_malformed_owner(api: Admission) -> None:
    found = api.refused(terms(RESERVATION, {"ownerID": "01234567890", **TAGGED}))
    assert paths(found) == [f"spec.{RESERVATION}[0].ownerID"]


@mirrors(SOURCE, RESERVATIONS + "should fail when the ownerID is set by itself")
def test_reservation_owner_alone(api: Admission) -> None:
    assert paths(api.refused(terms(RESERVATION, {"ownerID": OWNER}))) == [f"spec.{RESERVATION}[0]"]


@mirrors(SOURCE, RESERVATIONS + "should succeed with a valid instanceMatchCriteria 'open'")
def test_reservation_open_criteria(api: Admission) -> None:
    term = {"instanceMatchCriteria": "open"}
    assert stored_terms(api, RESERVATION, term) == [term]


@mirrors(SOURCE, RESERVATIONS + "should succeed with a valid instanceMatchCriteria 'targeted'")
def test_reservation_targeted_criteria(api: Admission) -> None:
    term = {"instanceMatchCriteria": "targeted"}
    assert stored_terms(api, RESERVATION, term) == [term]


@mirrors(SOURCE, RESERVATIONS + "should succeed with instanceMatchCriteria combined with tags")
def test_reservation_criteria_with_tags(api: Admission) -> None:
    term = {"instanceMatchCriteria": "open", **TAGGED}
    assert stored_terms(api, RESERVATION, term) == [term]


@mirrors(
    SOURCE,
    RESERVATIONS + "should succeed with instanceMatchCriteria combined with ownerID and tags",
)
def test_reservation_criteria_with_owner_and_tags(api: Admission) -> None:
    term = {"instanceMatchCriteria": "targeted", "ownerID": OWNER, **TAGGED}
    assert stored_terms(api, RESERVATION, term) == [term]


@mirrors(SOURCE, RESERVATIONS + "should fail with invalid instanceMatchCriteria value")
def test_reservation_invalid_criteria(api: Admission) -> None:
    found = api.refused(terms(RESERVATION, {"instanceMatchCriteria": "invalid"}))
    assert paths(found) == [f"spec.{RESERVATION}[0].instanceMatchCriteria"]


@mirrors(SOURCE, RESERVATIONS + "should fail when specifying id with instanceMatchCriteria")
def test_reservation_id_with_criteria(api: Admission) -> None:
    found = api.refused(terms(RESERVATION, {"id": "cr-12345749", "instanceMatchCriteria": "open"}))
    exclusive(found, RESERVATION)


# --- AMISelectorTerms ------------------------------------------------------------------------

AMI = "amiSelectorTerms"


@mirrors(SOURCE, AMIS + "should succeed with a valid ami selector on alias")
def test_ami_on_alias(api: Admission) -> None:
    assert stored_terms(api, AMI, {"alias": "al2023@latest"}) == [{"alias": "al2023@latest"}]


@mirrors(SOURCE, AMIS + "should succeed with a valid ami selector on tags")
def test_ami_on_tags(api: Admission) -> None:
    assert stored_terms(api, AMI, TAGGED) == [TAGGED]


@mirrors(SOURCE, AMIS + "should succeed with a valid ami selector on id")
def test_ami_on_id(api: Admission) -> None:
    assert stored_terms(api, AMI, {"id": "ami-12345749"}) == [{"id": "ami-12345749"}]


@mirrors(SOURCE, AMIS + "should succeed with a valid ami selector on name")
def test_ami_on_name(api: Admission) -> None:
    assert stored_terms(api, AMI, {"name": "testname"}) == [{"name": "testname"}]


@mirrors(SOURCE, AMIS + "should succeed with a valid ami selector on name and owner")
def test_ami_on_name_and_owner(api: Admission) -> None:
    term = {"name": "testname", "owner": "testowner"}
    assert stored_terms(api, AMI, term) == [term]


@mirrors(SOURCE, AMIS + "should succeed when an ami selector term has an owner key with tags")
def test_ami_owner_with_tags(api: Admission) -> None:
    term = {"owner": "testowner", **TAGGED}
    assert stored_terms(api, AMI, term) == [term]


@mirrors(SOURCE, AMIS + "should fail when a ami selector term has no values")
def test_ami_term_without_values(api: Admission) -> None:
    assert paths(api.refused(terms(AMI, {}))) == [f"spec.{AMI}[0]"]


@mirrors(SOURCE, AMIS + "should fail when a ami selector term has no tag map values")
def test_ami_term_without_tag_values(api: Admission) -> None:
    assert paths(api.refused(terms(AMI, {}))) == [f"spec.{AMI}[0]"]


@mirrors(SOURCE, AMIS + "should fail when a ami selector term has a tag map key that is empty")
def test_ami_tag_empty_value(api: Admission) -> None:
    assert paths(api.refused(terms(AMI, {"tags": {"test": ""}}))) == [f"spec.{AMI}[0].tags"]


@mirrors(SOURCE, AMIS + "should fail when a ami selector term has a tag map value that is empty")
def test_ami_tag_empty_key(api: Admission) -> None:
    assert paths(api.refused(terms(AMI, {"tags": {"": "testvalue"}}))) == [f"spec.{AMI}[0].tags"]


@mirrors(SOURCE, AMIS + "should fail when the last ami selector is invalid")
def test_ami_last_term_invalid(api: Admission) -> None:
    assert paths(api.refused(terms(AMI, *LAST_INVALID))) == [f"spec.{AMI}[3].tags"]


OTHER_FIELDS: dict[str, dict[str, Any]] = {
    "alias": {"alias": "al2023@latest"},
    "id": {"id": "ami-1234749"},
    "tags": TAGGED,
    "name": {"name": "my-custom-ami"},
    "owner": {"owner": "123456789"},
}


@mirrors(SOURCE, AMIS + "should fail when specifying id with other fields")
@pytest.mark.parametrize("entry", ["alias", "tags", "name", "owner"])
def test_ami_id_with_other_fields(api: Admission, entry: str) -> None:
    found = api.refused(terms(AMI, {"id": "ami-1234749", **OTHER_FIELDS[entry]}))
    exclusive(found, AMI)


@mirrors(SOURCE, AMIS + "should fail when specifying alias with other fields")
@pytest.mark.parametrize("entry", ["id", "tags", "name", "owner"])
def test_ami_alias_with_other_fields(api: Admission, entry: str) -> None:
    found = api.refused(terms(AMI, {"alias": "al2023@latest", **OTHER_FIELDS[entry]}))
    exclusive(found, AMI)


@mirrors(SOURCE, AMIS + "should fail when specifying alias with other terms")
def test_ami_alias_with_other_terms(api: Admission) -> None:
    found = api.refused(terms(AMI, {"alias": "al2023@latest"}, {"id": "ami-1234749"}))
    assert paths(found) == [f"spec.{AMI}"]


@mirrors(SOURCE, AMIS + "should succeed for valid aliases")
@pytest.mark.parametrize(
    ("alias", "family"),
    [
        ("al2@latest", "AL2"),
        ("al2@v20240625", "AL2"),
        ("al2023@latest", "AL2023"),
        ("al2023@v20240625", "AL2023"),
        ("bottlerocket@latest", "Bottlerocket"),
        ("bottlerocket@1.10.0", "Bottlerocket"),
        ("windows2019@latest", "Windows2019"),
        ("windows2022@latest", "Windows2022"),
        ("windows2025@latest", "Windows2025"),
    ],
)
def test_valid_aliases(api: Admission, alias: str, family: str) -> None:
    stored = api.admitted(nodeclass(amiFamily=family, amiSelectorTerms=[{"alias": alias}]))
    assert stored["spec"][AMI] == [{"alias": alias}]


@mirrors(SOURCE, AMIS + "should fail for incorrectly formatted aliases")
@pytest.mark.parametrize("alias", ["@latest", "al2023", "al2023@", "al2023-latest"])
def test_malformed_aliases(api: Admission, alias: str) -> None:
    found = api.refused(terms(AMI, {"alias": alias}))
    assert f"spec.{AMI}[0].alias" in paths(found)


@mirrors(SOURCE, AMIS + "should fail for an alias with an invalid family")
def test_alias_of_unknown_family(api: Admission) -> None:
    assert f"spec.{AMI}[0].alias" in paths(api.refused(terms(AMI, {"alias": "ubuntu@latest"})))


@mirrors(SOURCE, AMIS + "should fail when specifying non-latest versions with Windows aliases")
@pytest.mark.parametrize(
    "alias", ["windows2019@v1.0.0", "windows2022@v1.0.0", "windows2025@v1.0.0"]
)
def test_pinned_windows_aliases(api: Admission, alias: str) -> None:
    assert f"spec.{AMI}[0].alias" in paths(api.refused(terms(AMI, {"alias": alias})))
