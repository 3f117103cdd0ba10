"""The live agent's options (``driftwave agent serve --kubeconfig`` / ``--in-cluster``), and their
checks: each problem names its option and the rule. No web or cloud library is imported here, so
the command line can read them cheaply."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

DNS_NAME = re.compile(r"^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$")
"""An EKS cluster name: 1-100 characters, letters, digits, hyphens and underscores, starting
with a letter or digit."""


@dataclass
class LiveOptions:
    """The live agent's options (see ``driftwave agent serve --help``)."""

    cluster_name: str
    kubeconfig: Path | None = None
    context: str | None = None
    in_cluster: bool = False
    region: str | None = None
    profile: str | None = None
    driver: Literal["native", "karpenter"] = "native"
    interruption_queue: str | None = None
    leader_elect: bool = True
    lease_namespace: str = "kube-system"
    cluster_ca_bundle: str | None = None
    """The cluster's CA bundle for the EC2NodeClass hash (None: the connection's CA)."""
    identity: str = ""
    pod_name: str = ""
    """The pod's name (``POD_NAME``): the leader-election identity's prefix (else the host
    name); unused when ``identity`` is set."""
    host: str = "127.0.0.1"
    port: int = 9100
    tick: float = 0.5


def check_live_options(options: LiveOptions) -> list[str]:
    """The problems with ``options``, each naming its option and the rule (none: valid)."""
    from agent.hashing.stamps import ca_bundle_problem  # the hash's imports, only when run

    problems: list[str] = []
    bundle = options.cluster_ca_bundle
    if bundle is not None and (problem := ca_bundle_problem(bundle)):
        problems.append(f"--cluster-ca-bundle: {problem}")
    if options.kubeconfig is not None and options.in_cluster:
        problems.append(
            "--kubeconfig and --in-cluster: give one (rule: a kubeconfig file outside the "
            "cluster, the pod's service account inside it)"
        )
    if options.kubeconfig is not None and not options.kubeconfig.is_file():
        problems.append(f"--kubeconfig: {options.kubeconfig} is not a file")
    if options.context is not None and options.kubeconfig is None:
        problems.append("--context: only with --kubeconfig")
    if not DNS_NAME.fullmatch(options.cluster_name or ""):
        problems.append(
            f"--cluster-name: {options.cluster_name!r} is not an EKS cluster name (rule: 1-100 "
            "letters, digits, hyphens or underscores, starting with a letter or digit)"
        )
    if options.driver == "karpenter" and options.interruption_queue:
        problems.append(
            "--interruption-queue: Karpenter handles interruptions under --driver karpenter "
            "(rule: leave it to Karpenter's own queue)"
        )
    if not 0 <= options.port <= 65535:
        problems.append(f"--port: {options.port} is not a port (rule: 0-65535)")
    if not options.tick > 0:
        problems.append(f"--tick: {options.tick} must be above 0 seconds")
    return problems
