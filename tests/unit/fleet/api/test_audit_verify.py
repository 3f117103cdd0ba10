"""``GET /v1/audit/verify`` over the real API: a viewer reads the same report as ``driftwave
audit verify -o json`` prints (one service behind both), intact and then naming a row changed
by hand; without a token it is 401."""

from __future__ import annotations

from pathlib import Path

from common.auth import hash_token
from fleet.api.rbac import AccessControl, Grant
from fleet.service.reads.audit_chain import AuditVerification, verify_audit
from tests.unit.fleet.db.test_audit_chain import append, sqlite_tamper

from .helpers import client, serving, traced_context


def test_a_viewer_verifies_the_chain_and_sees_the_changed_row(tmp_path: Path) -> None:
    traced = traced_context(tmp_path)
    engine = traced.ctx.engine
    append(engine, 6)
    access = AccessControl({hash_token("vera-token"): Grant("vera", "viewer", None)})
    with serving(traced.ctx, access=access) as url, client(url, {}) as api:
        vera = {"Authorization": "Bearer vera-token"}
        assert api.get("/v1/audit/verify").status_code == 401
        answer = api.get("/v1/audit/verify", headers=vera)
        assert answer.status_code == 200, answer.text
        intact = AuditVerification.model_validate(answer.json())
        assert (intact.ok, intact.rows, intact.streams, intact.last_seq) == (True, 6, 1, 6)
        assert answer.json()["lastHash"] == intact.last_hash

        with engine.connect() as connection:
            (row_id,) = connection.exec_driver_sql("SELECT id FROM audit_log WHERE seq = 2").one()
        sqlite_tamper(engine, f"UPDATE audit_log SET after = '{{}}' WHERE id = {row_id}")
        answer = api.get("/v1/audit/verify", headers=vera)
        assert answer.status_code == 200, answer.text
        broken = AuditVerification.model_validate(answer.json())
        assert broken == verify_audit(traced.ctx)
        assert broken.broken is not None
        assert (broken.ok, broken.rows, broken.broken.id) == (False, 1, row_id)
        assert broken.broken.problem == "hash-mismatch"
