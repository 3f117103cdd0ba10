"""Well-known labels and restricted label domains, as Karpenter v1 uses them.

Karpenter (core and the AWS provider) reserves the ``karpenter.sh`` and ``karpenter.k8s.aws``
label domains for itself: a NodePool may not set or require a label in them, except the
well-known labels listed here, and never ``karpenter.sh/nodepool`` or ``kubernetes.io/hostname``.
"""

from __future__ import annotations

NODEPOOL_LABEL = "karpenter.sh/nodepool"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
HOSTNAME_LABEL = "kubernetes.io/hostname"
DO_NOT_DISRUPT_ANNOTATION = "karpenter.sh/do-not-disrupt"
TERMINATION_FINALIZER = "karpenter.sh/termination"
"""Held by NodeClaims and Nodes until the termination controller has drained and deleted them."""
INITIALIZED_LABEL = "karpenter.sh/initialized"
REMOVED_ANNOTATIONS = ("karpenter.sh/do-not-evict", "karpenter.sh/do-not-consolidate")
"""v1beta1 annotations Karpenter v1 removed in favour of ``karpenter.sh/do-not-disrupt``."""

NODECLASS_LABEL = "karpenter.k8s.aws/ec2nodeclass"
"""The label naming a NodeClaim's EC2NodeClass, which Karpenter writes on every NodeClaim."""

AWS_WELL_KNOWN_LABEL_KEYS = tuple(
    f"karpenter.k8s.aws/{name}"
    for name in (
        "instance-tenancy",
        "capacity-reservation-type",
        "capacity-reservation-id",
        "capacity-reservation-interruptible",
        "ec2nodeclass",
        "instance-encryption-in-transit-supported",
        "instance-category",
        "instance-hypervisor",
        "instance-family",
        "instance-generation",
        "instance-local-nvme",
        "instance-size",
        "instance-cpu",
        "instance-cpu-manufacturer",
        "instance-cpu-sustained-clock-speed-mhz",
        "instance-memory",
        "instance-ebs-bandwidth",
        "instance-network-bandwidth",
        "instance-gpu-name",
        "instance-gpu-manufacturer",
        "instance-gpu-count",
        "instance-gpu-memory",
        "instance-accelerator-name",
        "instance-accelerator-manufacturer",
        "instance-accelerator-count",
        "instance-capability-flex",
        "placement-group-id",
        "placement-group-partition",
    )
)
"""Labels in the ``karpenter.k8s.aws`` domain that NodePools may use, in Karpenter's order."""
AWS_WELL_KNOWN_LABELS = frozenset(AWS_WELL_KNOWN_LABEL_KEYS)

WELL_KNOWN_LABELS = frozenset(
    {
        NODEPOOL_LABEL,
        CAPACITY_TYPE_LABEL,
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "node.kubernetes.io/instance-type",
        "kubernetes.io/arch",
        "kubernetes.io/os",
        "node.kubernetes.io/windows-build",
        "topology.k8s.aws/zone-id",
    }
    | AWS_WELL_KNOWN_LABELS
)


LABEL_KEY = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?"
    r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$"
)
"""Karpenter's CRD pattern of a requirement key, and of a taint's key and value."""


def restricted_label_problem(key: str, allow_nodepool: bool = False) -> str | None:
    """Why a NodePool may not use label ``key`` (set or require it), or None when it may.

    ``allow_nodepool``: NodeClaims (which Karpenter writes) may require ``karpenter.sh/nodepool``
    and the node class label. A NodePool may not: the provider's CRD admits
    ``karpenter.k8s.aws/ec2nodeclass`` but Karpenter's runtime validation refuses it (it is not
    among Karpenter's well-known labels; Karpenter sets it on each NodeClaim itself).
    """
    if key == NODEPOOL_LABEL and not allow_nodepool:
        return f'label "{NODEPOOL_LABEL}" is restricted: Karpenter sets it on every node itself'
    if key == HOSTNAME_LABEL:
        return f'label "{HOSTNAME_LABEL}" is restricted: every node gets its own hostname'
    if key == NODECLASS_LABEL and not allow_nodepool:
        return f'label "{NODECLASS_LABEL}" is restricted: Karpenter sets it on every node itself'
    if key in WELL_KNOWN_LABELS:
        return None
    domain = key.split("/", 1)[0]  # as the CRD's rule: the whole key when it has no '/'
    for restricted in ("karpenter.sh", "karpenter.k8s.aws"):
        if domain.endswith(restricted):
            return (
                f'label domain "{restricted}" is restricted: use a well-known label '
                f"(such as {CAPACITY_TYPE_LABEL} or karpenter.k8s.aws/instance-family) "
                "or a label in a domain of your own"
            )
    return None
