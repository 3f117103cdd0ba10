"""Images and SSM parameters from AWS, for AMI resolution (:mod:`agent.cloud.amiresolve`).

:class:`AWSImages` is the resolver's image source over EC2 ``DescribeImages`` and SSM
``GetParameter``:

* images are described with ``IncludeDeprecated`` so a deprecated image is still seen (and
  ranked after non-deprecated ones, as Karpenter ranks them); an image is deprecated once its
  ``DeprecationTime`` has passed; only ``x86_64`` and ``arm64`` images are usable;
* name and tag terms become EC2 filters (``name``, ``tag:KEY``, ``tag-key`` for a ``*`` value)
  with the term's owners (``self``, ``amazon`` or account ids; a name term without an owner asks
  for ``self`` and ``amazon``);
* parameters under ``/aws/service/`` (the EKS-optimized image lines aliases read) are cached for
  24 hours, as Karpenter caches them, except that a cached value whose image has since been
  deprecated is read again: a deprecation moves the alias to the newer release at once.
  Other parameters (``ssmParameter`` terms) are read on every resolution.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodeclass_status import ResolvedAMI
from agent.clock import Clock, SystemClock
from agent.cloud.amiresolve import Image, resolve
from agent.cloud.amirules import Arch
from agent.cloud.aws.errors import AWSNotFound, AWSRequestError, aws_call
from agent.cloud.aws.session import AWSClients

ALIAS_CACHE = timedelta(hours=24)
ALIAS_PREFIX = "/aws/service/"
ARCHES: Mapping[str, Arch] = {"x86_64": "amd64", "arm64": "arm64"}


class AWSImages:
    """See the module docstring."""

    def __init__(self, clients: AWSClients, clock: Clock | None = None) -> None:
        self._clients = clients
        self._clock = clock if clock is not None else SystemClock()
        self._cached: dict[str, tuple[datetime, str | None]] = {}
        self._deprecated: set[str] = set()
        self._account: str | None = None

    @property
    def account_id(self) -> str:
        """The caller's account (STS GetCallerIdentity, once)."""
        if self._account is None:
            answer = aws_call("reading the caller's account", self._clients.sts.get_caller_identity)
            self._account = str(answer["Account"])
        return self._account

    def resolve(self, nodeclass: EC2NodeClass, kubernetes_version: str) -> list[ResolvedAMI]:
        """The node class's ``status.amis`` (raises AMIResolutionError when nothing resolves)."""
        return resolve(self, nodeclass, kubernetes_version)

    def parameter(self, name: str) -> str | None:
        """An SSM parameter's value (None when it does not exist); see the module docstring."""
        now = self._clock.now()
        cached = self._cached.get(name)
        fresh = cached is not None and now - cached[0] < ALIAS_CACHE
        if cached is not None and fresh and cached[1] not in self._deprecated:
            return cached[1]
        try:
            answer = aws_call(
                f"reading SSM parameter {name}", self._clients.ssm.get_parameter, Name=name
            )
            value: str | None = str(answer["Parameter"]["Value"])
        except AWSNotFound:
            value = None
        if name.startswith(ALIAS_PREFIX):
            self._cached[name] = (now, value)
        return value

    def images(self, ids: Sequence[str]) -> list[Image]:
        """The images with these ids (unknown or malformed ids are left out)."""
        wanted = [i for i in ids if i.startswith("ami-")]
        if not wanted:
            return []
        try:
            return self._describe(ImageIds=list(wanted))
        except (AWSNotFound, AWSRequestError):
            if len(wanted) == 1:
                return []
        return [image for one in wanted for image in self.images([one])]

    def find(
        self, *, name: str | None, owners: Sequence[str], tags: Mapping[str, str]
    ) -> list[Image]:
        """Images matching the name pattern and tags, owned by one of ``owners``."""
        filters: list[dict[str, Any]] = []
        if name is not None:
            filters.append({"Name": "name", "Values": [name]})
        for key, value in sorted(tags.items()):
            if value == "*":
                filters.append({"Name": "tag-key", "Values": [key]})
            else:
                filters.append({"Name": f"tag:{key}", "Values": [value]})
        request: dict[str, Any] = {"Filters": filters}
        if owners:
            request["Owners"] = list(owners)
        return self._describe(**request)

    def _describe(self, **request: Any) -> list[Image]:
        now = self._clock.now()
        found: list[Image] = []
        paginator = self._clients.ec2.get_paginator("describe_images")
        pages = aws_call(
            "describing images",
            lambda **kw: list(paginator.paginate(**kw)),
            IncludeDeprecated=True,
            **request,
        )
        for page in pages:
            for raw in page.get("Images", []):
                image = _image(raw, now)
                if image is None:
                    continue
                if image.deprecated:
                    self._deprecated.add(image.id)
                found.append(image)
        return found


def _image(raw: Mapping[str, Any], now: datetime) -> Image | None:
    arch = ARCHES.get(str(raw.get("Architecture", "")))
    if arch is None:
        return None
    deprecation = _time(raw.get("DeprecationTime"))
    return Image(
        id=str(raw["ImageId"]),
        name=str(raw.get("Name", "")),
        owner=str(raw.get("ImageOwnerAlias") or raw.get("OwnerId", "")),
        arch=arch,
        created=_time(raw.get("CreationDate")) or datetime(1970, 1, 1, tzinfo=UTC),
        deprecated=deprecation is not None and deprecation <= now,
        tags={str(t["Key"]): str(t.get("Value", "")) for t in raw.get("Tags", [])},
    )


def _time(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    text = str(value).replace("Z", "+00:00")
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
