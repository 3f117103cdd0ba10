"""Alembic migrations of the fleet database (``env.py`` and ``versions/``); run them through
:func:`fleet.db.engine.migrate` or ``python -m fleet.db upgrade``."""
