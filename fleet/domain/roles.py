"""The roles of the fleet API, in order: each may do what the ones before it may
(viewer < operator < approver < admin; :mod:`fleet.api.rbac` says what each may do)."""

from __future__ import annotations

ROLES = ("viewer", "operator", "approver", "admin")
RANK = {role: index for index, role in enumerate(ROLES)}
