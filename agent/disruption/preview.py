"""The drift preview (driftwave's addition): what drift would do, decided without doing it.

From the cluster as it stands, :func:`drift_preview` reports:

* every drifted node: its NodeClaim, NodePool, drift reason and since when, its image and the
  image a replacement would get;
* which of them drift would replace, which it would delete without a replacement (none of their
  pods will be evicted, or they all fit elsewhere: Karpenter launches nothing for them; with a
  ``terminationGracePeriod`` the node goes when it ends), and which are held, with the blocker
  (a pod's ``do-not-disrupt``, a PodDisruptionBudget that allows no disruption now, pods that
  would have nowhere to go, the node's own annotation, a halted NodePool);
* the order of replacement (drift's own: empty nodes first, then oldest drift) and the waves
  the NodePool's ``Drifted`` budgets allow, each wave starting when the previous one is done
  and waiting for scheduled budget windows to open;
* an ETA: when the last wave would finish, with each wave taking ``replace_seconds`` (launch,
  boot, readiness and drain of the replacement).

Nothing is created, tainted or deleted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from agent.api.conditions import condition, is_true
from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodeclaim import NodeClaim
from agent.api.nodepool import NodePool
from agent.cloud.amirules import first_fitting_image
from agent.disruption.budgets import PoolNodes, allowed_by_budgets, blocking, next_change
from agent.disruption.candidates import (
    Candidate,
    Snapshot,
    node_blocker,
    pod_blocker,
    pool_nodes,
    will_move,
)
from agent.disruption.commands import PassContext
from agent.disruption.controller import DisruptionController
from common.durations import parse_duration

DEFAULT_REPLACE_SECONDS = 60.0
"""A replacement's launch, boot, readiness and drain, when the caller knows no better."""
MAX_WAVES = 10_000
DISRUPTED = ("replace", "delete")
"""The actions of the nodes drift disrupts (in waves): with replacements, or without."""


@dataclass
class _Drifted:
    candidate: Candidate | None
    row: dict[str, Any]


def _target_image(controller: DisruptionController, claim_labels: dict[str, str], ref: str) -> str:
    try:
        nodeclass = controller.cluster.get(EC2NodeClass, ref)
    except Exception:
        return ""
    if nodeclass.status is None:
        return ""
    image = first_fitting_image(claim_labels, nodeclass.status.amis)
    return image.id if image is not None else ""


def drift_preview(
    controller: DisruptionController, replace_seconds: float = DEFAULT_REPLACE_SECONDS
) -> dict[str, Any]:
    """The preview as JSON-ready data (see the module docstring)."""
    context = controller.context()
    snapshot = context.snapshot
    now = snapshot.now
    drift = controller.drift
    candidates = {c.name: c for c in controller.candidates_for(drift, context)}
    counts = pool_nodes(snapshot, set(context.busy))
    rows: list[_Drifted] = []
    for claim in snapshot.claims:
        if not is_true(claim, "Drifted"):
            continue
        node = snapshot.node_of(claim)
        name = node.metadata.name or "" if node is not None else claim.name
        found = condition(claim, "Drifted")
        pool = claim.metadata.labels.get("karpenter.sh/nodepool", "")
        row: dict[str, Any] = {
            "node": name,
            "nodeClaim": claim.name,
            "nodePool": pool,
            "reason": found.reason if found is not None else "",
            "since": found.last_transition_time if found is not None else "",
            "image": claim.status.image_id,
            "targetImage": _target_image(
                controller, dict(claim.metadata.labels), claim.spec.node_class_ref.name
            ),
            "pods": len(snapshot.pods_by_node.get(name, [])),
        }
        blocker = _blocker(controller, claim, name, pool, context)
        row["action"] = "hold" if blocker else "replace"
        row["blocker"] = blocker
        row["drainWaitSeconds"] = 0.0
        grace = claim.spec.termination_grace_period
        if blocker is None and grace:
            waiting = next(
                (
                    held
                    for pod in snapshot.pods_by_node.get(name, [])
                    if (held := pod_blocker(pod, snapshot)) is not None
                ),
                None,
            )
            if waiting is not None:
                row["drainNote"] = (
                    f"the drain waits up to terminationGracePeriod {grace}: {waiting}"
                )
                row["drainWaitSeconds"] = (parse_duration(grace) or timedelta(0)).total_seconds()
        rows.append(_Drifted(candidates.get(name), row))
    replaceable = [r.candidate for r in rows if r.row["action"] == "replace" and r.candidate]
    if replaceable:
        budgets = dict.fromkeys(snapshot.pools, 10**9)
        commands = drift.compute_commands(budgets, replaceable, context)
        alone = {c.name for cmd in commands if not cmd.replacements for c in cmd.candidates}
        for item in rows:
            why = drift.unschedulable.get(item.row["node"])
            if why is not None and item.row["action"] == "replace":
                item.row["action"] = "hold"
                item.row["blocker"] = f"its pods would have nowhere to go: {why}"
            elif item.row["node"] in alone and item.row["action"] == "replace":
                item.row["action"] = "delete"
                item.row["deleteNote"] = _why_no_replacement(item.row, snapshot, claim_grace(item))
    order = sorted(
        (r for r in rows if r.row["action"] in DISRUPTED and r.candidate is not None),
        key=lambda r: (
            r.candidate.has_pods if r.candidate else False,
            r.row["since"],
            r.row["node"],
        ),
    )
    waves = budget_waves(
        [r.row for r in order], snapshot.pools, counts, now, timedelta(seconds=replace_seconds)
    )
    unbounded = any(w["endSeconds"] is None for w in waves)
    eta = max((w["endSeconds"] for w in waves if w["endSeconds"] is not None), default=0.0)
    return {
        "at": now.isoformat().replace("+00:00", "Z"),
        "drifted": [r.row for r in rows],
        "replace": sum(1 for r in order if r.row["action"] == "replace"),
        "delete": sum(1 for r in order if r.row["action"] == "delete"),
        "held": sum(1 for r in rows if r.row["action"] == "hold"),
        "waves": waves,
        "etaSeconds": None if unbounded else eta,
        "eta": None
        if unbounded
        else (now + timedelta(seconds=eta)).isoformat().replace("+00:00", "Z"),
        "haltedNodePools": controller.halts.halted(),
        "replaceSecondsAssumed": replace_seconds,
    }


def claim_grace(item: _Drifted) -> str | None:
    """The candidate's NodeClaim ``terminationGracePeriod``, if any."""
    if item.candidate is None:
        return None
    return item.candidate.claim.spec.termination_grace_period


def _why_no_replacement(row: dict[str, Any], snapshot: Snapshot, grace: str | None) -> str:
    """Why drift deletes the node without launching a replacement (as ``simulate`` does)."""
    pods = snapshot.pods_by_node.get(row["node"], [])
    staying = [
        found
        for pod in pods
        if not will_move(pod, snapshot) and (found := pod_blocker(pod, snapshot)) is not None
    ]
    if any(will_move(pod, snapshot) for pod in pods):
        return "no replacement: its pods fit on the other nodes"
    if not staying:
        return "no replacement: no pod of it needs a place"
    when = f" when its terminationGracePeriod {grace} ends" if grace else ""
    return (
        f"no replacement: none of its pods will be evicted ({staying[0]}), so Karpenter "
        f"launches nothing for them; the node is deleted{when}"
    )


def _blocker(
    controller: DisruptionController,
    claim: NodeClaim,
    node_name: str,
    pool: str,
    context: PassContext,
) -> str | None:
    snapshot = context.snapshot
    node = snapshot.nodes.get(node_name)
    reason = node_blocker(claim, node, snapshot, context.busy)
    if reason is not None:
        return reason
    if pool in controller.halts.halted():
        return f"drift is halted on NodePool {pool}"
    if claim.spec.termination_grace_period:
        return None
    for pod in snapshot.pods_by_node.get(node_name, []):
        found = pod_blocker(pod, snapshot)
        if found is not None:
            return found
    return None


def budget_waves(
    rows: Sequence[dict[str, Any]],
    pools: dict[str, NodePool],
    counts: dict[str, PoolNodes],
    now: datetime,
    step: timedelta,
) -> list[dict[str, Any]]:
    """Per NodePool, waves of at most the budget's allowance, one after another; a wave the
    budgets hold back names them (``waitsFor``) and how long it waits (``waitSeconds``)."""
    waves: list[dict[str, Any]] = []
    waits = {r["node"]: float(r.get("drainWaitSeconds", 0.0)) for r in rows}
    for pool_name in sorted({r["nodePool"] for r in rows}):
        pool = pools[pool_name]
        budgets = pool.spec.disruption.budgets
        queue = [r["node"] for r in rows if r["nodePool"] == pool_name]
        nodes = counts.get(pool_name, PoolNodes(len(queue), 0))
        at = now
        number = 0
        held: list[int] = []
        since: datetime | None = None
        while queue and number < MAX_WAVES:
            disrupting = nodes.disrupting if at == now else 0
            allowed = allowed_by_budgets(budgets, "Drifted", nodes.total, at)
            allowed = max(0, allowed - disrupting)
            if allowed <= 0:
                since = since or at
                found = blocking(budgets, "Drifted", nodes.total, at, disrupting)
                held += [index for index in found if index not in held]
                edge = next_change(pool, at)
                if edge is None:
                    waves.append(_wave(pool_name, None, queue, now, at, None, _held(pool, held)))
                    break
                at = edge.astimezone(now.tzinfo)
                continue
            number += 1
            taken, queue = queue[:allowed], queue[allowed:]
            wait = max((waits.get(n, 0.0) for n in taken), default=0.0)
            end = at + step + timedelta(seconds=wait)
            wave = _wave(pool_name, number, taken, now, at, end, _held(pool, held))
            wave["waitSeconds"] = (at - since).total_seconds() if since else 0.0
            waves.append(wave)
            at, held, since = end, [], None
    return waves


def _held(pool: NodePool, places: Sequence[int]) -> list[dict[str, Any]]:
    """The budgets at ``places`` of the pool's, as the preview names them."""
    budgets = pool.spec.disruption.budgets
    return [
        {
            "budget": index,
            "path": f"spec.disruption.budgets[{index}]",
            "nodes": budgets[index].nodes,
            "schedule": budgets[index].schedule,
            "duration": budgets[index].duration,
            "timeZone": budgets[index].time_zone,
            "reasons": budgets[index].reasons,
        }
        for index in places
    ]


def _wave(
    pool: str,
    number: int | None,
    nodes: list[str],
    now: datetime,
    start: datetime,
    end: datetime | None,
    held: list[dict[str, Any]],
) -> dict[str, Any]:
    if number is None:
        return {
            "nodePool": pool,
            "wave": None,
            "nodes": nodes,
            "startSeconds": None,
            "endSeconds": None,
            "note": "the budgets allow no drift disruption, and no schedule will change that",
            "waitsFor": held,
        }
    assert end is not None
    return {
        "nodePool": pool,
        "wave": number,
        "nodes": nodes,
        "startSeconds": (start - now).total_seconds(),
        "endSeconds": (end - now).total_seconds(),
        "start": start.isoformat().replace("+00:00", "Z"),
        "waitsFor": held,
    }
