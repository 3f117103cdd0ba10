"""Building the live agent from its options: the Kubernetes adapter, AWS and leader election.

:func:`build_live` is what ``driftwave agent serve --kubeconfig PATH`` / ``--in-cluster`` runs
before serving. It connects to the API server (kubeconfig or the pod's service account), checks
that the Karpenter v1 kinds are served, starts the informers and waits for their first lists,
connects to AWS (:func:`agent.cloud.aws.connect.connect_aws`: the cluster's control plane, the
images, subnets and instance types, the launch path and the interruption queue) and builds the
:class:`~agent.live.runtime.LiveAgent`. Anything that cannot be reached at start is a
:class:`~agent.live.parts.BuildError` saying what and how to fix it; later failures are retried
by the loop.
"""

from __future__ import annotations

import logging
import socket
import uuid
from dataclasses import dataclass

from agent.api.nodepool import NodePool
from agent.clock import SystemClock
from agent.cloud.aws.connect import AWSStartError, connect_aws
from agent.kube.port import ClusterError, NotFound
from agent.kube.real.cluster import KubeCluster
from agent.kube.real.leader import LeaderElector
from agent.kube.real.resources import resource_of
from agent.kube.real.rest import Forbidden, KubeREST
from agent.live.options import LiveOptions
from agent.live.parts import BuildError
from agent.live.runtime import LiveAgent
from agent.runner import ThreadRunner

LOG = logging.getLogger("driftwave.agent")
SYNC_TIMEOUT = 60.0
"""Seconds the informers get to list every kind at start."""


@dataclass
class BuiltLive:
    """The live agent and what keeps it connected (:class:`agent.live.parts.LiveParts`)."""

    agent: LiveAgent
    cluster: KubeCluster
    elector: LeaderElector | None
    launches: ThreadRunner

    def start(self) -> None:
        """Start leader election (the informers run since the build)."""
        if self.elector is not None:
            self.elector.start()

    def leading(self) -> bool:
        """Whether this replica leads (always, without leader election)."""
        return self.elector is None or self.elector.leading()

    def synced(self) -> bool:
        """Whether every informer has listed its kind."""
        return self.cluster.synced()

    def close(self) -> None:
        """Release the Lease, stop the informers and the launches, close the connections."""
        if self.elector is not None:
            self.elector.close()
        self.launches.close()
        self.cluster.close()
        self.cluster.rest.close()


def connect(options: LiveOptions) -> KubeREST:
    """The API server's client from ``--kubeconfig`` / ``--context`` or ``--in-cluster``."""
    try:
        if options.in_cluster:
            rest = KubeREST.in_cluster()
        else:
            path = str(options.kubeconfig) if options.kubeconfig is not None else None
            rest = KubeREST.from_kubeconfig(path, options.context)
        rest.request("GET", resource_of(NodePool).path(), query={"limit": "1"})
    except NotFound as exc:
        raise BuildError(
            "the API server does not serve karpenter.sh/v1 NodePools: install the CRDs "
            "(the agent's Helm chart carries them) and try again"
        ) from exc
    except Forbidden as exc:
        raise BuildError(
            f"the API server refused the agent's credentials or RBAC denies listing NodePools: "
            f"{exc} (grant the chart's ClusterRole to the identity the agent runs as)"
        ) from exc
    except ClusterError as exc:
        raise BuildError(f"cannot reach the Kubernetes API server: {exc}") from exc
    return rest


def build_live(options: LiveOptions) -> BuiltLive:
    """Build the live agent (module docstring); raises BuildError."""
    rest = connect(options)
    cluster = KubeCluster(rest)
    cluster.start()
    launches = ThreadRunner()
    try:
        if not cluster.wait_synced(SYNC_TIMEOUT):
            missing = [i.res.plural for i in cluster.informers.values() if not i.synced.is_set()]
            raise BuildError(
                f"the informers did not list {', '.join(missing)} within {SYNC_TIMEOUT:.0f}s "
                "(check the agent's RBAC: it must list and watch them)"
            )
        clock = SystemClock()
        try:
            aws = connect_aws(
                cluster_name=options.cluster_name,
                region=options.region,
                profile=options.profile,
                interruption_queue=options.interruption_queue,
                cluster=cluster,
                clock=clock,
            )
        except AWSStartError as exc:
            raise BuildError(str(exc)) from exc
        agent = LiveAgent(
            cluster=cluster,
            cloud=aws.cloud,
            catalog=aws.catalog,
            instance_types=aws.instance_types,
            images=aws.images,
            nodeclass_status=aws.nodeclass_status,
            control_plane=aws.control_plane,
            interruption=aws.interruption,
            driver=options.driver,
            clock=clock,
            nodeclass_deleted=aws.cloud.forget_nodeclass,
            ca_bundle=options.cluster_ca_bundle or rest.ca_bundle(),
            launches=launches,
        )
    except BaseException:
        launches.close()
        cluster.close()
        rest.close()
        raise
    elector = None
    if options.leader_elect:
        elector = LeaderElector(
            rest,
            namespace=options.lease_namespace,
            identity=options.identity or identity(options.pod_name),
        )
    return BuiltLive(agent, cluster, elector, launches)


def identity(pod_name: str = "") -> str:
    """This replica's leader-election identity: the pod's name (``POD_NAME``, read by the
    caller; else the host name) and a suffix."""
    host = pod_name or socket.gethostname()
    return f"{host}_{uuid.uuid4().hex[:8]}"
