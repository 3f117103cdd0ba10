"""The fleet's services, transport-free: the CLI, the REST API and the Celery tasks are thin
entry points into these. Six parts, a subpackage each:

* :mod:`fleet.service.commands`: start a rollout, the operator's pause, resume, abort, approve
  and rollback, apply a Fleet, tokens for automation;
* :mod:`fleet.service.scheduling`: the scheduler that advances rollouts (its view, decision and
  effects), gates, joiners, the queue, plans and ETAs;
* :mod:`fleet.service.steps`: the step runner the workers call (apply, verify, roll back);
* :mod:`fleet.service.reads`: read models for people and scripts (status, lists, history, what
  clusters run now);
* :mod:`fleet.service.notifications`: CloudEvents to the Fleets' webhooks;
* :mod:`fleet.service.contact`: probes of the agents and each cluster's health.

What all of them share stays here: :mod:`~fleet.service.context` (database, tracer, time),
:mod:`~fleet.service.ports` (messages to workers, gate metrics), :mod:`~fleet.service.ids` and
:mod:`~fleet.service.errors` (the service's errors: the database's never leave the service).
"""
