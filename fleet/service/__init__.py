"""The fleet's services: commands (start, pause, resume, abort, approve, rollback), the scheduler
that advances rollouts, and the step runner the workers call. Transport-free: the CLI, the REST
API and the Celery tasks are thin entry points into these."""
