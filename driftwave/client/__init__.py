"""The fleet as the command line reaches it: embedded (the fleet database, here) or distributed
(the fleet's REST API, through a context).

* :mod:`~driftwave.client.config`: the config file of contexts (server, CA, credentials), as
  kubectl has; read, checked and written (mode 0600) here only.
* :mod:`~driftwave.client.port`: :class:`~driftwave.client.port.FleetPort`, what the fleet
  commands ask of the fleet, in typed documents (:mod:`fleet.documents`,
  :mod:`fleet.api.documents`), and :func:`~driftwave.client.port.open_port`, which picks
  the implementation for the context in use;
* :mod:`~driftwave.client.embedded`: the port over the fleet's service layer (the database);
* :mod:`~driftwave.client.remote`: the port over the REST API (httpx, timeouts, the context's
  CA, its token or OIDC ID token); httpx is imported through
  :mod:`~driftwave.client.httpclient`, without its own command-line tool;
* :mod:`~driftwave.client.oidc`: ``driftwave login`` (authorization code with PKCE on a loopback
  redirect, or the device flow) and refreshing an expired ID token.

Nothing here imports typer: the commands (:mod:`driftwave.cli`) turn the errors raised here
(:class:`~driftwave.client.errors.ClientError`) into ``error: ...`` and exit 1.
"""
