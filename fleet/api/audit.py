"""The audit route: ``GET /v1/audit/verify`` (any role, viewer up), the report of
:func:`fleet.service.reads.audit_chain.verify_audit`, as ``driftwave audit verify -o json`` prints
it.
It answers 200 whether or not the chain is intact: ``ok`` and ``broken`` say which."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.responses import JSONResponse

from fleet.api.deps import V1, V1_AUTH, Ctx, v1_responses
from fleet.service.reads.audit_chain import AuditVerification, verify_audit


def add_audit_routes(app: FastAPI) -> None:
    """Add the audit routes to ``app``."""

    @app.get(
        f"{V1}/audit/verify",
        summary="Verify the audit's hash chain",
        tags=["audit"],
        dependencies=V1_AUTH,
        responses=v1_responses({200: {"model": AuditVerification}}),
    )
    def get_audit_verify(ctx: Ctx) -> JSONResponse:
        """Walk the audit log's hash chain from its first row and name the first row that was
        changed (``hash-mismatch``) or removed (``sequence-gap``, ``previous-hash-mismatch``),
        with the rows verified and the last intact row's hash."""
        return JSONResponse(verify_audit(ctx).model_dump(mode="json"))
