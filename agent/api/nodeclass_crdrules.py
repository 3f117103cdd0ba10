"""The EC2NodeClass's admission rules, as data for the CRD generator (:mod:`agent.api.crdrules`).

Rule for rule what the AWS provider's CRD (v1.14.1) carries beyond the models' schema. Some of
Karpenter's selector-term rules fire only when *every* term breaks them (``!self.all(...)``);
they are carried as written, so the API server answers as it does under Karpenter, while
``driftwave validate`` checks each term on its own (:mod:`common.selectors`).
"""

from __future__ import annotations

from agent.api.blockdevices import VOLUME_SIZE
from agent.api.crdrules import ATOMIC, DATE_TIME, INT32, INT64, Keywords, Rules, at, cel, conditions
from agent.api.kubelet import EVICTION_SIGNALS, RESERVABLE
from agent.api.quantity import QUANTITY_PATTERN
from common.selectors import (
    ACCOUNT_ID,
    ALIAS_FAMILIES,
    ALIAS_TO_AMI_FAMILY,
    AMI_ID,
    PLACEMENT_GROUP_ID,
    RESERVATION_ID,
    SECURITY_GROUP_ID,
    SUBNET_ID,
    WINDOWS_ALIAS_FAMILIES,
)


def _listed(values: tuple[str, ...] | list[str], sep: str = ",") -> str:
    return sep.join(f"'{v}'" for v in values)


def _family_rule(alias: str) -> tuple[str, str]:
    family = ALIAS_TO_AMI_FAMILY[alias]
    article = "an" if family[0] in "AEIOU" else "a"
    return (
        f"!has(self.amiFamily) || (self.amiSelectorTerms.exists(x, has(x.alias) && "
        f"x.alias.find('^[^@]+') == '{alias}') ? (self.amiFamily == 'Custom' || "
        f"self.amiFamily == '{family}') : true)",
        f"if set, amiFamily must be '{family}' or 'Custom' when using {article} {family} alias",
    )


_SPEC = cel(
    (
        "(has(self.role) && !has(self.instanceProfile)) || "
        "(!has(self.role) && has(self.instanceProfile))",
        "must specify exactly one of ['role', 'instanceProfile']",
    ),
    *(_family_rule(alias) for alias in ALIAS_FAMILIES),
    (
        "self.amiSelectorTerms.exists(x, has(x.alias)) ? true : has(self.amiFamily)",
        "must specify amiFamily if amiSelectorTerms does not contain an alias",
    ),
)
_WINDOWS = [family for family in ALIAS_FAMILIES if family in WINDOWS_ALIAS_FAMILIES]
_ALIAS = cel(
    (
        "self.matches('^[a-zA-Z0-9]+@.+$')",
        "'alias' is improperly formatted, must match the format 'family@version'",
    ),
    (
        f"self.split('@')[0] in [{_listed(ALIAS_FAMILIES)}]",
        f"family is not supported, must be one of the following: {_listed(ALIAS_FAMILIES, ', ')}",
    ),
    (
        f"self.split('@')[0] in [{_listed(_WINDOWS)}] ? self.split('@')[1] == 'latest' : true",
        "windows families may only specify version 'latest'",
    ),
)
_TERM_TAGS: Keywords = {
    "maxProperties": 20,
    **cel(("self.all(k, k != '' && self[k] != '')", "empty tag keys or values aren't supported")),
}


def _at_least_one(*fields: str) -> tuple[str, str]:
    return (
        f"self.all(x, {' || '.join(f'has(x.{f})' for f in fields)})",
        f"expected at least one, got none, [{_listed(fields, ', ')}]",
    )


def _exclusive(
    field: str, others: str, where: str, quantifier: str = "!self.all"
) -> tuple[str, str]:
    return (
        f"{quantifier}(x, has(x.{field}) && {others})",
        f"'{field}' is mutually exclusive, cannot be set {where}",
    )


_IN_TERM = "with a combination of other fields in"
_AMI_TERMS = cel(
    _at_least_one("tags", "id", "name", "alias", "ssmParameter"),
    _exclusive(
        "id",
        "(has(x.alias) || has(x.tags) || has(x.name) || has(x.owner))",
        f"{_IN_TERM} amiSelectorTerms",
        "!self.exists",
    ),
    _exclusive(
        "alias",
        "(has(x.id) || has(x.tags) || has(x.name) || has(x.owner))",
        f"{_IN_TERM} amiSelectorTerms",
        "!self.exists",
    ),
    (
        "!(self.exists(x, has(x.alias)) && self.size() != 1)",
        "'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms",
    ),
)
_SUBNET_TERMS = cel(
    ("self.size() != 0", "subnetSelectorTerms cannot be empty"),
    _at_least_one("tags", "id"),
    _exclusive("id", "has(x.tags)", f"{_IN_TERM} a subnet selector term"),
)
_SECURITY_GROUP_TERMS = cel(
    ("self.size() != 0", "securityGroupSelectorTerms cannot be empty"),
    _at_least_one("tags", "id", "name"),
    _exclusive("id", "(has(x.tags) || has(x.name))", f"{_IN_TERM} a security group selector term"),
    _exclusive("name", "(has(x.tags) || has(x.id))", f"{_IN_TERM} a security group selector term"),
)
_RESERVATION_TERMS = cel(
    _at_least_one("tags", "id", "instanceMatchCriteria"),
    _exclusive(
        "id",
        "(has(x.tags) || has(x.ownerID) || has(x.instanceMatchCriteria))",
        "along with other fields in a capacity reservation selector term",
    ),
)
_TAGS = cel(
    ("self.all(k, k != '')", "empty tag keys aren't supported"),
    (
        "self.all(k, k !='eks:eks-cluster-name')",
        "tag contains a restricted tag matching eks:eks-cluster-name",
    ),
    (
        "self.all(k, !k.startsWith('kubernetes.io/cluster') )",
        "tag contains a restricted tag matching kubernetes.io/cluster/",
    ),
    (
        "self.all(k, k != 'karpenter.sh/nodepool')",
        "tag contains a restricted tag matching karpenter.sh/nodepool",
    ),
    (
        "self.all(k, k !='karpenter.sh/nodeclaim')",
        "tag contains a restricted tag matching karpenter.sh/nodeclaim",
    ),
    (
        "self.all(k, k !='karpenter.k8s.aws/ec2nodeclass')",
        "tag contains a restricted tag matching karpenter.k8s.aws/ec2nodeclass",
    ),
)

_EVICTION_VALUE = r"^((\d{1,2}(\.\d{1,2})?|100(\.0{1,2})?)%||" + QUANTITY_PATTERN[1:-1] + ")$"


def _signals(field: str) -> Keywords:
    signals = _listed(EVICTION_SIGNALS)
    return cel((f"self.all(x, x in [{signals}])", f"valid keys for {field} are [{signals}]"))


def _reserved(field: str) -> Keywords:
    return cel(
        (
            f"self.all(x, {' || '.join(f'x=={r!r}' for r in RESERVABLE)})",
            f"valid keys for {field} are [{_listed(RESERVABLE)}]",
        ),
        (
            "self.all(x, !self[x].startsWith('-'))",
            f"{field} value cannot be a negative resource quantity",
        ),
    )


_KUBELET: Rules = {
    "": cel(
        (
            "has(self.imageGCHighThresholdPercent) && has(self.imageGCLowThresholdPercent) ?  "
            "self.imageGCHighThresholdPercent > self.imageGCLowThresholdPercent  : true",
            "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent",
        ),
        (
            "has(self.evictionSoft) ? self.evictionSoft.all(e, "
            "(e in self.evictionSoftGracePeriod)):true",
            "evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod",
        ),
        (
            "has(self.evictionSoftGracePeriod) ? self.evictionSoftGracePeriod.all(e, "
            "(e in self.evictionSoft)):true",
            "evictionSoftGracePeriod OwnerKey does not have a matching evictionSoft",
        ),
    ),
    "evictionHard": _signals("evictionHard"),
    "evictionHard{}": {"pattern": _EVICTION_VALUE},
    "evictionSoft": _signals("evictionSoft"),
    "evictionSoft{}": {"pattern": _EVICTION_VALUE},
    "evictionSoftGracePeriod": _signals("evictionSoftGracePeriod"),
    "evictionMaxPodGracePeriod": INT32,
    "imageGCHighThresholdPercent": INT32,
    "imageGCLowThresholdPercent": INT32,
    "kubeReserved": _reserved("kubeReserved"),
    "kubeReserved{}": {"pattern": QUANTITY_PATTERN},
    "systemReserved": _reserved("systemReserved"),
    "systemReserved{}": {"pattern": QUANTITY_PATTERN},
    "maxPods": INT32,
    "podsPerCore": INT32,
}
_NETWORK_INTERFACES = cel(
    (
        "self.size() == 0 || self.exists(x, x.deviceIndex == 0 && x.networkCardIndex == 0 && "
        "x.interfaceType == 'interface')",
        "networkInterfaces must include a primary interface with interfaceType='interface'",
    ),
    (
        "self.all(x, self.filter(y, x.networkCardIndex == y.networkCardIndex && "
        "x.deviceIndex == y.deviceIndex).size() == 1 && (x.interfaceType != 'efa-only' || "
        "self.filter(y, x.networkCardIndex == y.networkCardIndex && "
        "y.interfaceType == 'efa-only').size() == 1))",
        "networkInterfaces must not have duplicate networkCardIndex and deviceIndex pairs, and "
        "can have at most one efa device per network card",
    ),
)

_EC2NODECLASS_SPEC: Rules = {
    "": _SPEC,
    "amiSelectorTerms": _AMI_TERMS,
    "amiSelectorTerms[].alias": _ALIAS,
    "amiSelectorTerms[].id": {"pattern": AMI_ID},
    "amiSelectorTerms[].tags": _TERM_TAGS,
    "subnetSelectorTerms": {"minItems": None, **_SUBNET_TERMS},
    "subnetSelectorTerms[].id": {"pattern": SUBNET_ID},
    "subnetSelectorTerms[].tags": _TERM_TAGS,
    "securityGroupSelectorTerms": {"minItems": None, **_SECURITY_GROUP_TERMS},
    "securityGroupSelectorTerms[].id": {"pattern": SECURITY_GROUP_ID},
    "securityGroupSelectorTerms[].tags": _TERM_TAGS,
    "capacityReservationSelectorTerms": _RESERVATION_TERMS,
    "capacityReservationSelectorTerms[].id": {"pattern": RESERVATION_ID},
    "capacityReservationSelectorTerms[].ownerID": {"pattern": ACCOUNT_ID},
    "capacityReservationSelectorTerms[].tags": _TERM_TAGS,
    "role": {"minLength": None, **cel(("self != ''", "role cannot be empty"))},
    "instanceProfile": {
        "minLength": None,
        **cel(("self != ''", "instanceProfile cannot be empty")),
    },
    "tags": _TAGS,
    **at("kubelet", _KUBELET),
    "blockDeviceMappings": cel(
        (
            "self.filter(x, has(x.rootVolume)?x.rootVolume==true:false).size() <= 1",
            "must have only one blockDeviceMappings with rootVolume",
        )
    ),
    "blockDeviceMappings[].ebs": cel(
        (
            "has(self.snapshotID) || has(self.volumeSize)",
            "snapshotID or volumeSize must be defined",
        ),
        (
            "!has(self.volumeInitializationRate) || "
            "(has(self.snapshotID) && self.snapshotID != '')",
            "snapshotID must be set when volumeInitializationRate is set",
        ),
    ),
    "blockDeviceMappings[].ebs.iops": INT64,
    "blockDeviceMappings[].ebs.throughput": INT64,
    "blockDeviceMappings[].ebs.volumeInitializationRate": INT32,
    "blockDeviceMappings[].ebs.volumeSize": {"pattern": VOLUME_SIZE},
    "metadataOptions": {
        "default": {
            "httpEndpoint": "enabled",
            "httpProtocolIPv6": "disabled",
            "httpPutResponseHopLimit": 1,
            "httpTokens": "required",
        }
    },
    "metadataOptions.httpPutResponseHopLimit": INT64,
    "ipPrefixCount": INT32,
    "connectionTracking": cel(
        (
            "has(self.tcpEstablishedTimeout) || has(self.udpStreamTimeout) || has(self.udpTimeout)",
            "at least one of tcpEstablishedTimeout, udpStreamTimeout, or udpTimeout must be set",
        )
    ),
    "connectionTracking.tcpEstablishedTimeout": INT32,
    "connectionTracking.udpStreamTimeout": INT32,
    "connectionTracking.udpTimeout": INT32,
    "networkInterfaces": _NETWORK_INTERFACES,
    "networkInterfaces[].deviceIndex": INT32,
    "networkInterfaces[].networkCardIndex": INT32,
    "placementGroupSelector": cel(
        ("has(self.name) || has(self.id)", "expected at least one, got none, ['name', 'id']"),
        ("!(has(self.name) && has(self.id))", "'name' and 'id' are mutually exclusive"),
    ),
    "placementGroupSelector.id": {"pattern": PLACEMENT_GROUP_ID},
}

EC2NODECLASS: Rules = {
    "": {"required": None},
    **at("spec", _EC2NODECLASS_SPEC),
    "status.amis[].requirements[].values": ATOMIC,
    "status.capacityReservations[].endTime": DATE_TIME,
    "status.capacityReservations[].id": {"pattern": RESERVATION_ID},
    "status.capacityReservations[].ownerID": {"pattern": ACCOUNT_ID},
    **at("status.conditions", conditions(strict=True, listed_by_type=False)),
}
"""The EC2NodeClass's rules by JSON path."""
