"""Resolving ``amiSelectorTerms`` against the simulated AMI catalog.

The rules are shared with the AWS adapter (:mod:`agent.cloud.amiresolve`); this module makes the
catalog an image source. Not modelled here: image states other than available, deprecation
times (an image is deprecated or not), owner aliases other than ``self`` / ``amazon``, launch
permissions, the AMI cache's refresh (resolution is instantaneous), and SSM parameter ARNs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodeclass_status import ResolvedAMI
from agent.cloud.amiresolve import AMIResolutionError, Image, owned, resolve, selected
from agent.cloud.simulated.amis import AMI, AMICatalog

__all__ = ["AMIResolutionError", "CatalogImages", "resolve_amis"]


def _image(ami: AMI) -> Image:
    return Image(ami.id, ami.name, ami.owner, ami.arch, ami.created, ami.deprecated, ami.tags)


class CatalogImages:
    """The simulated catalog as an :class:`~agent.cloud.amiresolve.ImageSource`."""

    def __init__(self, catalog: AMICatalog) -> None:
        self.catalog = catalog

    @property
    def account_id(self) -> str:
        """The catalog's own account."""
        return self.catalog.account_id

    def parameter(self, name: str) -> str | None:
        """The catalog's SSM parameter."""
        return self.catalog.parameter(name)

    def images(self, ids: Sequence[str]) -> list[Image]:
        """The catalog's images with these ids."""
        return [_image(self.catalog.get(i)) for i in ids if i in self.catalog]

    def find(
        self, *, name: str | None, owners: Sequence[str], tags: Mapping[str, str]
    ) -> list[Image]:
        """The catalog's images matching name, owners and tags."""
        found = (_image(ami) for ami in self.catalog)
        return [
            image
            for image in found
            if owned(image, owners, self.catalog.account_id) and selected(image, name, tags)
        ]


def resolve_amis(
    catalog: AMICatalog, nodeclass: EC2NodeClass, kubernetes_version: str
) -> list[ResolvedAMI]:
    """The node class's ``status.amis`` for a cluster at ``kubernetes_version`` (e.g. ``"1.30"``).

    Raises :class:`AMIResolutionError` when nothing resolves.
    """
    return resolve(CatalogImages(catalog), nodeclass, kubernetes_version)
