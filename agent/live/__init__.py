"""The live agent: the controllers against a real cluster and AWS, on the wall clock.

:mod:`.runtime` holds :class:`~agent.live.runtime.LiveAgent` (the agent runtime the service
answers from, and one step of the agent's loop); :mod:`.loop` runs that step on a thread while
this replica leads; :mod:`.build` wires the real adapters from the command's options.
"""
