"""The documents the fleet's services build for people and scripts, as pydantic models: the
services return them, the REST API (:mod:`fleet.api`) sends them and generates its OpenAPI
schema from them, and the command line's embedded client hands them on as the remote one does.

- :mod:`fleet.documents.rollouts`: a rollout started, listed, its status and progress, a
  command's result;
- :mod:`fleet.documents.audit`: an audit row, a rollout's trail and a fleet's;
- :mod:`fleet.documents.clusters`: a fleet's clusters, the contact with their agents, what they
  run and how they stand against their latest step;
- :mod:`fleet.documents.history`: a cluster's history across rollouts;
- :mod:`fleet.documents.notices`: the warnings about an accepted manifest;
- :mod:`fleet.documents.events`: the CloudEvents the notifier posts to webhooks.

Field names are camelCase on the wire; times are RFC 3339 UTC strings.
"""
