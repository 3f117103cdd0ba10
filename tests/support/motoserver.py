"""moto's server on loopback, in the test process (so tests can seed its backends directly).

moto keeps its backends per process, across servers: each server starts and ends with moto's
own reset (``POST /moto-api/reset``), so a test never sees another test's resources.

One gap in moto's speed is filled here (:func:`index_ec2_tags`): moto finds an EC2 resource's
tags by scanning every tag of its backend, for each instance it filters on a tag or describes,
so DescribeInstances over N tagged instances takes time in N²: at 1,400 instances one listing
by the cluster's tags did not answer in 60 s, and each call of 200 instances by id took seconds,
which the live-agent benchmark had counted as the agent's. The fix gives the same answer from
moto's own table of tags by resource (its ``tags`` mapping), in the same order.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import httpx
from moto.ec2.models.core import TaggedEC2Resource
from moto.ec2.utils import EC2_PREFIX_TO_RESOURCE, get_prefix
from moto.server import ThreadedMotoServer

ACCOUNT = "123456789012"
"""The account moto answers as (its default)."""


def _tags_of(resource: TaggedEC2Resource) -> list[dict[str, str]]:
    """The resource's tags as moto's ``describe_tags`` filtered on its id answers them, read
    from moto's table of tags by resource instead of a scan of every tag."""
    resource_id = getattr(resource, "id", None)
    if not resource_id:
        return []
    tags: dict[str, str] = resource.ec2_backend.tags.get(resource_id) or {}  # type: ignore[attr-defined]
    kind = EC2_PREFIX_TO_RESOURCE.get(get_prefix(resource_id), "")
    return [
        {"resource_id": resource_id, "key": key, "value": value, "resource_type": kind}
        for key, value in tags.items()
    ]


def index_ec2_tags() -> None:
    """Make moto find each EC2 resource's tags by its id (module docstring); idempotent."""
    TaggedEC2Resource.get_tags = _tags_of  # type: ignore[method-assign,assignment]


@contextmanager
def moto_server() -> Iterator[str]:
    """Start moto's server on 127.0.0.1 (a free port); yield its URL; stop it afterwards."""
    index_ec2_tags()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    url = ""
    try:
        wsgi = server._server  # the port it bound (moto gives no public accessor)
        assert wsgi is not None
        port = wsgi.server_port
        url = f"http://127.0.0.1:{port}"
        httpx.post(f"{url}/moto-api/reset", timeout=10).raise_for_status()
        yield url
    finally:
        if url:
            httpx.post(f"{url}/moto-api/reset", timeout=10)
        server.stop()
