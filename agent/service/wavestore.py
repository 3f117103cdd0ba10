"""Waves kept in the cluster itself: the ``driftwave.io/waves`` annotation of each EC2NodeClass a
wave changed.

Why an annotation of the EC2NodeClass, not an object of our own: the record of a wave is written
in the *same* update that changes the class's ``amiSelectorTerms`` (applying) or puts them back
(rolling back), so the cluster can never carry a change without its record, nor a record of a
change it does not carry; it needs no CRD and no RBAC beyond what the agent already has on
EC2NodeClasses; it travels with the object it describes (deleting the class deletes its
history), and neither Karpenter nor the drift hash reads annotations (the EC2NodeClass hash
covers the spec only). A restarted or failed-over agent reads the records back and knows every
wave: its request, what it replaced, its phase.

The value is JSON: a list of wave records, oldest first, at most :data:`KEEP` per class (a
record is a few hundred bytes; the API server allows 256 KiB of annotations per object). A wave
that spans several classes is recorded on each of them; the copies are written together and
the one with the longest history wins when they disagree (a write cut short between two
classes). Counters (failures, replaced nodes) are saved with each phase change, so a restarted
agent knows them as they were at the wave's last phase change.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from agent.api.ec2nodeclass import EC2NodeClass
from agent.kube.port import Cluster, ClusterError, NotFound
from agent.service.waves import ClassBefore, Selection, Wave
from common.wire.phases import Phase
from common.wire.waves import Progress

ANNOTATION = "driftwave.io/waves"
KEEP = 8
"""Wave records kept per EC2NodeClass (the oldest go first)."""

log = logging.getLogger(__name__)


def _time(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _parse_time(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) else None


def _selection(value: Selection) -> dict[str, Any]:
    return {"amiSelectorTerms": value.terms, "amiFamily": value.ami_family}


def _load_selection(value: dict[str, Any]) -> Selection:
    return Selection(list(value["amiSelectorTerms"]), value.get("amiFamily"))


def _document(progress: Progress) -> dict[str, Any]:
    dumped: dict[str, Any] = progress.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return dumped


def _progress(value: Any) -> Progress | None:
    return Progress.model_validate(value) if isinstance(value, dict) else None


def to_record(wave: Wave) -> dict[str, Any]:
    """``wave`` as the JSON-ready record kept in the annotation."""
    return {
        "id": wave.id,
        "request": wave.request,
        "nodeClasses": wave.node_classes,
        "nodePools": wave.pools,
        "before": {
            name: {
                "amiSelectorTerms": b.terms,
                "amiFamily": b.ami_family,
                "images": b.images,
                "nodeImages": b.node_images,
            }
            for name, b in wave.before.items()
        },
        "applied": {name: _selection(s) for name, s in wave.applied.items()},
        "restored": {name: _selection(s) for name, s in wave.restored.items()},
        "kubernetesVersionBefore": wave.kubernetes_version_before,
        "targetImages": wave.target_images,
        "appliedAt": _time(wave.applied_at),
        "phase": wave.phase,
        "reason": wave.reason,
        "convergedAt": _time(wave.converged_at),
        "finishedAt": _time(wave.finished_at),
        "phaseSince": _time(wave.phase_since),
        "history": [[p, _time(at), why] for p, at, why in wave.history],
        "counts": [wave.launch_failures, wave.registration_failures, wave.nodes_replaced],
        "finalProgress": (None if wave.final_progress is None else _document(wave.final_progress)),
    }


def from_record(data: dict[str, Any]) -> Wave:
    """The wave a record describes; raises KeyError / ValueError / TypeError on a bad record."""
    applied_at = _parse_time(data["appliedAt"])
    if applied_at is None:
        raise ValueError("appliedAt is missing")
    counts = list(data.get("counts") or [0, 0, 0])
    phase = Phase(data["phase"])
    return Wave(
        id=str(data["id"]),
        request=dict(data["request"]),
        node_classes=[str(n) for n in data["nodeClasses"]],
        pools=[str(p) for p in data["nodePools"]],
        before={
            name: ClassBefore(
                terms=list(b["amiSelectorTerms"]),
                ami_family=b.get("amiFamily"),
                images=list(b.get("images") or []),
                node_images=list(b.get("nodeImages") or []),
            )
            for name, b in data["before"].items()
        },
        applied={n: _load_selection(s) for n, s in (data.get("applied") or {}).items()},
        restored={n: _load_selection(s) for n, s in (data.get("restored") or {}).items()},
        kubernetes_version_before=str(data["kubernetesVersionBefore"]),
        target_images=[str(i) for i in data["targetImages"]],
        applied_at=applied_at,
        phase=phase,
        reason=str(data.get("reason") or ""),
        converged_at=_parse_time(data.get("convergedAt")),
        finished_at=_parse_time(data.get("finishedAt")),
        phase_since=_parse_time(data.get("phaseSince")),
        history=[
            (Phase(p), at, str(why)) for p, t, why in data["history"] if (at := _parse_time(t))
        ],
        launch_failures=int(counts[0]),
        registration_failures=int(counts[1]),
        nodes_replaced=int(counts[2]),
        final_progress=_progress(data.get("finalProgress")),
    )


def records_of(nodeclass: EC2NodeClass) -> list[dict[str, Any]]:
    """The wave records on ``nodeclass`` (an unreadable annotation counts as none, logged)."""
    raw = nodeclass.metadata.annotations.get(ANNOTATION)
    if not raw:
        return []
    try:
        value = json.loads(raw)
    except ValueError:
        log.warning("EC2NodeClass %s: %s is not JSON; ignored", nodeclass.name, ANNOTATION)
        return []
    return [r for r in value if isinstance(r, dict)] if isinstance(value, list) else []


def with_record(nodeclass: EC2NodeClass, wave: Wave) -> EC2NodeClass:
    """``nodeclass`` with ``wave``'s record in its annotation (replacing an older copy, keeping
    the last :data:`KEEP`)."""
    records = [r for r in records_of(nodeclass) if r.get("id") != wave.id]
    records.append(to_record(wave))
    annotations = dict(nodeclass.metadata.annotations)
    annotations[ANNOTATION] = json.dumps(records[-KEEP:], separators=(",", ":"), sort_keys=True)
    metadata = nodeclass.metadata.model_copy(update={"annotations": annotations})
    return nodeclass.model_copy(update={"metadata": metadata})


def save(cluster: Cluster, wave: Wave) -> None:
    """Write ``wave``'s record on each of its EC2NodeClasses (a class deleted meanwhile is
    skipped; a failed write is logged and tried again at the wave's next save)."""
    for name in wave.node_classes:
        try:
            current = cluster.get(EC2NodeClass, name)
            changed = with_record(current, wave)
            if changed.metadata.annotations != current.metadata.annotations:
                cluster.update(changed)
        except NotFound:
            continue
        except ClusterError as exc:
            log.warning("saving wave %s on EC2NodeClass %s: %s", wave.id, name, exc)


def load(classes: Iterable[EC2NodeClass]) -> dict[str, Wave]:
    """Every wave recorded on ``classes`` (a cluster's EC2NodeClasses), by id, in the order
    they were applied."""
    found: dict[str, Wave] = {}
    for nodeclass in classes:
        for record in records_of(nodeclass):
            try:
                wave = from_record(record)
            except (KeyError, ValueError, TypeError) as exc:
                log.warning("EC2NodeClass %s: unreadable wave record (%s)", nodeclass.name, exc)
                continue
            known = found.get(wave.id)
            if known is None or len(wave.history) > len(known.history):
                found[wave.id] = wave
    return dict(sorted(found.items(), key=lambda item: item[1].applied_at))
