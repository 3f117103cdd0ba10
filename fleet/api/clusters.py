"""The cluster routes that are not a fleet's: ``GET /v1/clusters/{name}/history`` (every step
any rollout took on the cluster, newest first, with how it stands now; ``?fleet=`` names its
fleet when several fleets have a cluster of that name: 404 for an unknown cluster or fleet,
409 for an ambiguous name without ``fleet``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import FastAPI, Query
from fastapi.responses import JSONResponse

from common.names import DNS_SUBDOMAIN
from fleet.api.deps import V1, V1_AUTH, Ctx, v1_responses
from fleet.api.documents import ErrorDocument
from fleet.api.errors import ConflictError, NotFoundError
from fleet.api.responses import sent
from fleet.documents.history import ClusterHistory
from fleet.service.reads.history import ClusterAmbiguous, ClusterUnknown, cluster_history

FleetQuery = Annotated[
    str | None,
    Query(
        description="The cluster's fleet (needed when several fleets have it): a fleet's name, "
        "a DNS subdomain.",
        pattern=DNS_SUBDOMAIN,
        max_length=253,
    ),
]


def add_cluster_routes(app: FastAPI) -> None:
    """Add the cluster routes to ``app``."""

    @app.get(
        f"{V1}/clusters/{{name}}/history",
        summary="A cluster's history across rollouts",
        tags=["fleets"],
        dependencies=V1_AUTH,
        responses=v1_responses(
            {
                200: {"model": ClusterHistory},
                404: {"model": ErrorDocument, "description": "No fleet has that cluster."},
                409: {
                    "model": ErrorDocument,
                    "description": "Several fleets have a cluster of that name: pass ?fleet=.",
                },
            }
        ),
    )
    def get_history(name: str, ctx: Ctx, fleet: FleetQuery = None) -> JSONResponse:
        """Every step any rollout took on the cluster, newest first: rollout, release, ring,
        wave, state, rollback, images before and after, nodes, outcome and how the cluster
        stands now on the fleet's last observation."""
        try:
            return sent(cluster_history(ctx, name, fleet))
        except ClusterUnknown as exc:
            raise NotFoundError(str(exc.args[0]), code="cluster_not_found") from exc
        except ClusterAmbiguous as exc:
            raise ConflictError(str(exc.args[0]), code="cluster_ambiguous") from exc
