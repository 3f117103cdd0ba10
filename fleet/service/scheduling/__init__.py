"""The scheduler: the view of a rollout it decides from (pure), its decision per tick and the
effects it applies, the gates, joiners, the queue, plans and ETAs, and its heartbeat.
"""
