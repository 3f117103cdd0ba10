"""Celery workers that carry each wave step from the scheduler to the cluster agents."""
