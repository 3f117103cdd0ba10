"""What the application's processes may do on PostgreSQL: the ``driftwave_app`` role.

The schema is owned by the role ``driftwave db upgrade`` connects as (the owner); the api,
scheduler and worker processes connect as a login role that is a member of :data:`APP_ROLE`.
:func:`grant_application_role` (run by the audit chain's migration and by every upgrade that
brings the schema to the newest revision, so tables added later are covered too) gives that
role:

- ``USAGE`` on the schema, ``USAGE, SELECT`` on its sequences;
- ``SELECT, INSERT, UPDATE, DELETE`` on every table, except
- ``audit_log``: ``SELECT, INSERT`` only (no ``UPDATE``, ``DELETE`` nor ``TRUNCATE``: the
  audit is append-only for the application, whatever its triggers), and
- ``alembic_version``: ``SELECT`` only (the schema's revision is the owner's to change).

The role is created (``NOLOGIN``) when missing and the owner may create roles; otherwise the
upgrade stops, saying to create it once. SQLite (embedded mode) has no roles: nothing to do.
"""

from __future__ import annotations

from sqlalchemy import Connection, text

APP_ROLE = "driftwave_app"
"""The group role the application's login roles are members of."""

_CREATE_ROLE = f"""
DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
    BEGIN
      CREATE ROLE {APP_ROLE} NOLOGIN;
    EXCEPTION
      WHEN duplicate_object OR unique_violation THEN NULL;
      WHEN insufficient_privilege THEN
        RAISE EXCEPTION 'the role {APP_ROLE} does not exist and % may not create roles: an '
          'administrator creates it once (CREATE ROLE {APP_ROLE} NOLOGIN), then run '
          'driftwave db upgrade again', current_user;
    END;
  END IF;
END $$
"""

_GRANT = f"""
DO $$
DECLARE
  s text := current_schema();
BEGIN
  EXECUTE format('GRANT USAGE ON SCHEMA %I TO {APP_ROLE}', s);
  EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA %I TO {APP_ROLE}',
    s);
  EXECUTE format('GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA %I TO {APP_ROLE}', s);
END $$
"""

_NARROW = [
    f"REVOKE UPDATE, DELETE, TRUNCATE ON audit_log FROM {APP_ROLE}, PUBLIC",
    f"REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON alembic_version FROM {APP_ROLE}, PUBLIC",
]

_REVOKE = f"""
DO $$
DECLARE
  s text := current_schema();
BEGIN
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
    EXECUTE format('REVOKE ALL ON ALL TABLES IN SCHEMA %I FROM {APP_ROLE}', s);
    EXECUTE format('REVOKE ALL ON ALL SEQUENCES IN SCHEMA %I FROM {APP_ROLE}', s);
    EXECUTE format('REVOKE ALL ON SCHEMA %I FROM {APP_ROLE}', s);
  END IF;
END $$
"""


def grant_application_role(connection: Connection) -> None:
    """Give :data:`APP_ROLE` the application's privileges on the current schema (PostgreSQL;
    idempotent), creating the role when missing."""
    if connection.dialect.name != "postgresql":
        return
    connection.execute(text(_CREATE_ROLE))
    connection.execute(text(_GRANT))
    for statement in _NARROW:
        connection.execute(text(statement))


def revoke_application_role(connection: Connection) -> None:
    """Take back what :func:`grant_application_role` gave on the current schema (the role
    itself stays: other databases may use it)."""
    if connection.dialect.name == "postgresql":
        connection.execute(text(_REVOKE))
