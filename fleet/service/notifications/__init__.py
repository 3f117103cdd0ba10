"""Notifications: audit rows mapped to CloudEvents (pure) and delivered to the Fleets' webhooks
by a background notifier.
"""
