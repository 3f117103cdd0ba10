"""Read models for people and scripts: a rollout's status and progress, the list of rollouts,
a cluster's history, what each cluster runs now as last observed, and the audit's chain check.
"""
