"""EC2NodeClass selector terms (AMIs, subnets, security groups, capacity reservations).

Each term selects by one way (tags, id, name, alias, ssmParameter); combining ``id`` or ``alias``
with other fields of the same term is refused, and an ``alias`` term must be the only AMI term.
Karpenter's CRD writes some of the mutual-exclusion rules so that they only fire when *every*
term breaks them; driftwave checks each term on its own, which is what the rules are meant to say.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from common.kubemodel import KubeModel, matching, rule_error

_ALIAS = re.compile(r"[a-zA-Z0-9]+@.+")
ALIAS_FAMILIES = ("al2", "al2023", "bottlerocket", "windows2019", "windows2022", "windows2025")
WINDOWS_ALIAS_FAMILIES = frozenset({"windows2019", "windows2022", "windows2025"})
AMI_ID = r"ami-[0-9a-z]+"
SUBNET_ID = r"subnet-[0-9a-z]+"
SECURITY_GROUP_ID = r"sg-[0-9a-z]+"
RESERVATION_ID = r"^cr-[0-9a-z]+$"
ACCOUNT_ID = r"^[0-9]{12}$"
PLACEMENT_GROUP_ID = r"^pg-[0-9a-z]+$"
"""The id patterns of Karpenter's CRD (the first three unanchored, as Karpenter writes them)."""
ALIAS_TO_AMI_FAMILY = {
    "al2": "AL2",
    "al2023": "AL2023",
    "bottlerocket": "Bottlerocket",
    "windows2019": "Windows2019",
    "windows2022": "Windows2022",
    "windows2025": "Windows2025",
}


def _check_tags(tags: dict[str, str] | None) -> dict[str, str] | None:
    if tags is not None:
        if len(tags) > 20:
            raise ValueError("at most 20 tags per selector term")
        for key, value in tags.items():
            if key == "" or value == "":
                raise ValueError(
                    f"empty tag key or value for {key!r} (rule: empty tag keys or values aren't "
                    "supported; use '*' to match any value)"
                )
    return tags


def _camel(term: KubeModel, name: str) -> str:
    return type(term).model_fields[name].alias or name


def _only(term: KubeModel, field: str, others: tuple[str, ...], where: str) -> None:
    present = [_camel(term, name) for name in others if getattr(term, name) is not None]
    if getattr(term, field) is not None and present:
        raise rule_error(
            f"'{field}' cannot be combined with {', '.join(present)} in one {where} "
            f"(rule: '{field}' is mutually exclusive with the other fields of a term)",
            field,
        )


def _at_least_one(term: KubeModel, fields: tuple[str, ...]) -> None:
    if all(getattr(term, name) is None for name in fields):
        names = ", ".join(_camel(term, name) for name in fields)
        raise rule_error(f"the term selects nothing: set one of {names}")


class AMISelectorTerm(KubeModel):
    """``amiSelectorTerms[]``: one way to select AMIs."""

    alias: Annotated[str, Field(max_length=30)] | None = None
    id: Annotated[str, matching(AMI_ID, "an AMI id such as ami-0123abcd")] | None = None
    name: str | None = None
    owner: str | None = None
    ssm_parameter: str | None = None
    tags: dict[str, str] | None = None

    _check = field_validator("tags")(_check_tags)

    @field_validator("alias")
    @classmethod
    def _alias(cls, alias: str | None) -> str | None:
        if alias is None:
            return alias
        family, _, version = alias.partition("@")
        if not _ALIAS.fullmatch(alias):
            raise ValueError(
                f"alias {alias!r} must have the form family@version, such as al2023@v20240807 "
                "or al2023@latest (rule: 'alias' must match the format 'family@version')"
            )
        if family not in ALIAS_FAMILIES:
            raise ValueError(
                f"alias family {family!r} is not supported; use one of "
                f"{', '.join(ALIAS_FAMILIES)} (rule: alias family must be supported)"
            )
        if family in WINDOWS_ALIAS_FAMILIES and version != "latest":
            raise ValueError(
                f"alias {alias!r}: windows families may only specify version 'latest' "
                "(rule: windows aliases are always @latest)"
            )
        return alias

    @model_validator(mode="after")
    def _one_way(self) -> AMISelectorTerm:
        _at_least_one(self, ("tags", "id", "name", "alias", "ssm_parameter"))
        _only(self, "id", ("alias", "tags", "name", "owner"), "amiSelectorTerm")
        _only(self, "alias", ("id", "tags", "name", "owner"), "amiSelectorTerm")
        return self

    @property
    def alias_family(self) -> str | None:
        """The family part of an alias (``al2023``), or None when the term is not an alias."""
        return self.alias.partition("@")[0] if self.alias else None


class SubnetSelectorTerm(KubeModel):
    """``subnetSelectorTerms[]``: subnets by id or by tags."""

    id: Annotated[str, matching(SUBNET_ID, "a subnet id such as subnet-0abc")] | None = None
    tags: dict[str, str] | None = None

    _check = field_validator("tags")(_check_tags)

    @model_validator(mode="after")
    def _one_way(self) -> SubnetSelectorTerm:
        _at_least_one(self, ("tags", "id"))
        _only(self, "id", ("tags",), "subnetSelectorTerm")
        return self


class SecurityGroupSelectorTerm(KubeModel):
    """``securityGroupSelectorTerms[]``: security groups by id, name or tags."""

    id: (
        Annotated[str, matching(SECURITY_GROUP_ID, "a security group id such as sg-0abc")] | None
    ) = None
    name: str | None = None
    tags: dict[str, str] | None = None

    _check = field_validator("tags")(_check_tags)

    @model_validator(mode="after")
    def _one_way(self) -> SecurityGroupSelectorTerm:
        _at_least_one(self, ("tags", "id", "name"))
        _only(self, "id", ("tags", "name"), "securityGroupSelectorTerm")
        _only(self, "name", ("tags", "id"), "securityGroupSelectorTerm")
        return self


class CapacityReservationSelectorTerm(KubeModel):
    """``capacityReservationSelectorTerms[]``: On-Demand Capacity Reservations to use."""

    id: Annotated[str, matching(RESERVATION_ID, "a reservation id such as cr-0abc")] | None = None
    instance_match_criteria: Literal["open", "targeted"] | None = None
    owner_id: Annotated[str, matching(ACCOUNT_ID, "a 12-digit AWS account id")] | None = Field(
        default=None, alias="ownerID"
    )
    tags: dict[str, str] | None = None

    _check = field_validator("tags")(_check_tags)

    @model_validator(mode="after")
    def _one_way(self) -> CapacityReservationSelectorTerm:
        _at_least_one(self, ("tags", "id", "instance_match_criteria"))
        _only(
            self, "id", ("tags", "owner_id", "instance_match_criteria"), "capacity reservation term"
        )
        return self


class PlacementGroupSelector(KubeModel):
    """``placementGroupSelector``: a placement group by name or id (not both)."""

    id: Annotated[str, matching(PLACEMENT_GROUP_ID, "a placement group id")] | None = None
    name: Annotated[str, Field(min_length=1)] | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> PlacementGroupSelector:
        if (self.id is None) == (self.name is None):
            raise rule_error(
                "set exactly one of 'name' or 'id' (rule: they are mutually exclusive)"
            )
        return self
