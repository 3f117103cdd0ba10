"""The composition root: the ``driftwave`` command wires the agent, the fleet and the workers.

Nothing imports this package; it imports the others, so the boundaries between them (the agent
never imports the fleet, the fleet never imports Celery) hold while one command offers all.
"""
