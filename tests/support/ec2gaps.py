"""Where moto's server answers an AWS API that Karpenter (or the agent) relies on differently from
AWS, the smallest faithful fix, made by the proxy in front of moto
(:mod:`tests.support.awsproxy`). Every gap filled here is listed in docs/development.md.

* **EC2 CreateFleet with a launch template: the instances' security groups.** EC2 launches each
  instance with the security groups its launch template names (``SecurityGroupIds``, or the
  primary network interface's ``Groups``). moto's fleet reads them from a key launch templates
  never have, so its instances come up outside those groups, and Karpenter's drift check (the
  instance's groups against ``status.securityGroups``) marks every node ``SecurityGroupDrift``
  the moment it launches. The fix: after moto's answer, each launched instance is given its
  template's groups with ``ModifyInstanceAttribute`` (EC2's own API for an instance's groups).
  EC2 never shows a launched instance without those groups, so ``DescribeInstances`` waits while
  a CreateFleet is being answered: Karpenter lists its instances on controllers of their own
  and caches what it reads (a minute), and a list that fell between moto's launch and the
  fix had it mark the new nodes ``SecurityGroupDrift`` and replace one of them.

What moto lacks entirely is not faked here: Karpenter runs with ``ISOLATED_VPC=true`` (no Price
List API; its built-in prices), see :mod:`tests.support.karpenter`.
"""

from __future__ import annotations

import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3

from tests.support.awsproxy import Answer, AWSProxy, Request, aws_proxy


def _strip(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def launched_by_template(body: bytes) -> dict[tuple[str, str], list[str]]:
    """CreateFleet's answer: (launch template id, version) → the instance ids launched from it."""
    root = ET.fromstring(body)
    found: dict[tuple[str, str], list[str]] = {}
    for element in root.iter():
        if _strip(element.tag) != "fleetInstanceSet":
            continue
        for item in element:
            template, version, ids = "", "", []
            for part in item.iter():
                name = _strip(part.tag)
                if name == "launchTemplateId" and part.text:
                    template = part.text
                elif name == "version" and part.text:
                    version = part.text
                elif name == "instanceIds":
                    ids = [i.text for i in part if i.text]
            if template and ids:
                found.setdefault((template, version), []).extend(ids)
    return found


def template_groups(ec2: Any, template: str, version: str) -> list[str]:
    """The security groups a launch template version gives its instances."""
    versions = ec2.describe_launch_template_versions(
        LaunchTemplateId=template, Versions=[version or "$Default"]
    )["LaunchTemplateVersions"]
    if not versions:
        return []
    data = versions[0].get("LaunchTemplateData", {})
    groups = list(data.get("SecurityGroupIds") or [])
    for interface in data.get("NetworkInterfaces") or []:
        if int(interface.get("DeviceIndex", 0)) == 0:
            groups.extend(interface.get("Groups") or [])
    return groups


def fleet_security_groups(proxy: AWSProxy, region: str) -> None:
    """Fill the CreateFleet security-group gap (module docstring) for requests through ``proxy``."""
    ec2 = boto3.client(
        "ec2",
        region_name=region,
        endpoint_url=proxy.upstream,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )

    launching = threading.Lock()

    def answer(request: Request) -> Answer:
        with launching:
            status, headers, body = proxy.forward(request)
            if status != 200:
                return status, headers, body
            for (template, version), instances in launched_by_template(body).items():
                groups = template_groups(ec2, template, version)
                if groups:
                    for instance in instances:
                        ec2.modify_instance_attribute(InstanceId=instance, Groups=groups)
        return status, headers, body

    def describe(request: Request) -> Answer:
        with launching:
            return proxy.forward(request)

    proxy.intercept(lambda r: r.action == "CreateFleet", answer)
    proxy.intercept(lambda r: r.action == "DescribeInstances", describe)


@contextmanager
def faithful_aws(moto_url: str, region: str = "us-east-1") -> Iterator[AWSProxy]:
    """A proxy in front of moto's server with every gap of this module filled; its URL is what
    ``AWS_ENDPOINT_URL`` should name."""
    with aws_proxy(moto_url) as proxy:
        fleet_security_groups(proxy, region)
        yield proxy
