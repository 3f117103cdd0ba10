"""The session's watch for Python's text in messages (:mod:`tests.support.reprs`) sees a dict or
list formatted into a message on each road a message takes: a row written to the fleet's
database, an API answer, a command's output, a webhook event. Each sighting is taken back here,
so this test passes; in any other test it fails that test."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import typer
from fastapi import FastAPI
from fastapi.responses import JSONResponse
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from fleet.db.engine import make_engine, migrate
from fleet.service.context import FleetContext, audit
from fleet.service.notifications.events import AuditRow, RolloutFacts, events_of
from tests.support.reprs import Sightings

LEAK = {"ami-9015": 40}


def test_a_dict_in_an_audit_reason_is_seen(tmp_path: Path, python_text_watch: Sightings) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'fleet.db'}")
    migrate(engine)
    ctx = FleetContext(engine)
    with ctx.writing() as uow:
        now = datetime.now(UTC)
        audit(uow, now, "test", "x.y", ("rollout", "r"), reason=f"runs {LEAK}")
        audit(uow, now, "test", "x.z", ("rollout", "r"), after={"error": f"got {list(LEAK)}"})
        uow.commit()
    found = python_text_watch.take()
    assert any("runs {'ami-9015': 40}" in f for f in found), found
    assert any("got ['ami-9015']" in f for f in found), found


def test_a_list_in_an_api_error_is_seen(python_text_watch: Sightings) -> None:
    app = FastAPI()

    @app.get("/x")
    def x() -> JSONResponse:
        return JSONResponse({"error": {"message": f"bad keys {sorted(LEAK)}"}}, 400)

    assert TestClient(app).get("/x").status_code == 400
    (found,) = python_text_watch.take()
    assert "bad keys ['ami-9015']" in found


def test_a_dict_in_a_command_output_is_seen(python_text_watch: Sightings) -> None:
    app = typer.Typer()

    @app.command()
    def show() -> None:
        print(f"it runs {LEAK}")

    assert CliRunner().invoke(app, []).exit_code == 0
    (found,) = python_text_watch.take()
    assert "it runs {'ami-9015': 40}" in found


def test_a_dict_in_a_webhook_event_is_seen(python_text_watch: Sightings) -> None:
    row = AuditRow(
        1,
        datetime.now(UTC),
        "scheduler",
        "rollout.transition",
        "rollout",
        "ro-1",
        "ro-1",
        before={"state": "gating"},
        after={"state": "rolling-back", "ring": 0, "wave": 0},
        reason=f"regressed: runs {LEAK}",
    )
    (event,) = events_of(row, RolloutFacts("ro-1", "rel", "fleet", ("canary",)))
    event.envelope()
    found = python_text_watch.take()
    assert any("webhook event rollback.started text" in f for f in found), found
    assert any("webhook event rollback.started reason" in f for f in found), found


def test_json_and_words_are_not_flagged(python_text_watch: Sightings) -> None:
    app = typer.Typer()

    @app.command()
    def show() -> None:
        print('{"images": ["ami-9015"], "reason": "40 nodes on ami-9015"}')

    assert CliRunner().invoke(app, []).exit_code == 0
    assert python_text_watch.take() == []
