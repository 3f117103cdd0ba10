"""``driftwave audit``: the audit log's hash chain (``verify``) and its copy as OpenTelemetry
log records (``export``).

The fleet's service layer is imported inside the commands, so ``driftwave audit --help`` loads
none of it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from driftwave.cli.context import ContextOpt, fail, fleet_context, fleet_port
from driftwave.cli.group import Group, show_help_when_bare
from driftwave.cli.output import JsonOpt, OutputOpt, emit, output_format

if TYPE_CHECKING:
    from fleet.service.reads.audit_chain import AuditVerification

HELP = (
    "The audit log: check that no row was changed or removed since it was written, and send "
    "the rows to an OpenTelemetry collector as log records."
)

audit_app = typer.Typer(name="audit", help=HELP, cls=Group)
audit_app.callback(invoke_without_command=True)(show_help_when_bare)


def _say(report: AuditVerification) -> None:
    broken = report.broken
    if broken is None:
        streams = "stream" if report.streams == 1 else "streams"
        print(f"audit chain intact: {report.rows} rows in {report.streams} {streams} verified")
        if report.last_seq is not None:
            print(f"last row: seq {report.last_seq}, hash {report.last_hash}")
        return
    print(
        f"audit chain broken at row {broken.id} (stream {broken.stream}, seq {broken.seq}): "
        f"{broken.problem}: {broken.message}"
    )
    print(f"{report.rows} rows before it verified")


@audit_app.command("verify")
def verify(context: ContextOpt = None, output: OutputOpt = None, as_json: JsonOpt = False) -> None:
    """Walk the audit's hash chain and name the first row that was changed or removed.

    Every audit row carries seq (its place in the chain), prev_hash (the previous row's hash)
    and hash (SHA-256 of its time, actor, action, object, before, after, reason, trace and span
    ids, seq and prev_hash). verify recomputes each hash in order and stops at the first row
    that breaks the chain:

      hash-mismatch           the row was changed after it was written
      sequence-gap            rows before it were removed
      previous-hash-mismatch  a row before it was removed, inserted or rewritten

    It exits 0 with the rows and streams verified and the last row's hash (keep it: removing
    the newest rows leaves no gap, a changed last hash shows it), or 1 naming the row's id,
    stream and seq. -o json and -o yaml print the report as GET /v1/audit/verify returns it.
    With a context it asks that fleet's API (GET /v1/audit/verify, role viewer).

    Example: driftwave audit verify
    """
    chosen = output_format(output, as_json)
    with fleet_port(context, changes=False) as fleet:
        report = fleet.verify_audit()
    emit(report.model_dump(mode="json"), chosen, table=lambda _: _say(report))
    if not report.ok:
        raise typer.Exit(1)


@audit_app.command("export")
def export(
    rollout: Annotated[
        str | None, typer.Option(help="Only this rollout's audit trail.", show_default=False)
    ] = None,
    after_id: Annotated[
        int | None,
        typer.Option(min=0, help="Only the rows after this audit id.", show_default=False),
    ] = None,
    endpoint: Annotated[
        str | None,
        typer.Option(
            envvar="DRIFTWAVE_OTLP_ENDPOINT",
            help="The OTLP/HTTP collector (/v1/logs is added), e.g. http://otel-collector:4318. "
            "Default: OTEL_EXPORTER_OTLP_LOGS_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Send the audit rows to an OpenTelemetry collector as log records, oldest first.

    Each record carries the row's trace and span ids (it shows inside the rollout's trace),
    its time, a body in words (ada approve rollout/r-1: canary clean) and attributes
    audit.actor, audit.action, audit.object, audit.reason, audit.before, audit.after,
    audit.hash and audit.prev_hash. It prints how many rows were sent and the last id, to
    continue from with --after-id. No collector configured, or one that refuses a batch, exits 1.

    Example: driftwave audit export --endpoint http://127.0.0.1:4318 --after-id 1200
    """
    from driftwave.client.embedded import service_errors
    from driftwave.client.errors import ClientError
    from fleet.audit_logs import audit_log_provider, export_audit, otlp_logs_target

    target = otlp_logs_target(endpoint)
    if target is None:
        fail(
            "no OpenTelemetry collector to send to: give --endpoint or set "
            "DRIFTWAVE_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT"
        )
    provider, exporter = audit_log_provider("driftwave-cli", endpoint)
    try:
        with fleet_context() as ctx:
            try:
                with service_errors():
                    count, last = export_audit(ctx, provider, rollout_id=rollout, after_id=after_id)
            except ClientError as exc:
                fail(str(exc))
        provider.force_flush()
    finally:
        provider.shutdown()
    if exporter.failed:
        fail(f"{target} refused {exporter.failed} batch(es) of the {count} audit rows")
    print(f"{count} audit rows sent to {target} as log records (last id {last})")
