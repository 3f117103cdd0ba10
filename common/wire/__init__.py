"""The wire: every type that crosses the fleet-agent HTTP hop, in one place.

* :mod:`common.wire.base`: the base of the documents (:class:`~common.wire.base.Document`; the
  agent's answers, read tolerantly: :class:`~common.wire.base.Answer`) and the error document;
* :mod:`common.wire.target`: a wave's target and its EC2NodeClass selector;
* :mod:`common.wire.phases`: a wave's phase;
* :mod:`common.wire.observation`: the agent's observation of a wave's cluster, with its verdict
  (``state``, ``code``);
* :mod:`common.wire.waves`: the wave and rollback requests, and the wave document;
* :mod:`common.wire.status`: the status document;
* :mod:`common.wire.plan`: the plan request and document.

Requests are manifest models (strict: an agent refuses a field it does not know); answers are
read tolerantly (a field a reader does not know is ignored, an enum value it does not know is
``unknown``), so a fleet reads the answers of agents one version older or newer than itself.
"""
