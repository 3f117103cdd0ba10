"""Commands people and scripts give: start a rollout from a Release and the operator's
pause, resume, abort, approve and rollback; apply a Fleet; tokens for automation; the rule of
one live rollout per cluster and the typed refusals.
"""
