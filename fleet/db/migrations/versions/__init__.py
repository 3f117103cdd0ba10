"""The revisions of the fleet database schema, oldest first (``0001_initial``, ...)."""
