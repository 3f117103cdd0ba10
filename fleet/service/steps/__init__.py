"""Step running: what a worker does with one step message (apply, verify, roll back), what it
reads before and writes after, and what it may conclude from what a cluster shows.
"""
