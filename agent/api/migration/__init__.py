"""v1beta1 → v1 migration of Karpenter manifests (``driftwave migrate``).

The migration edits the YAML in place (comments and key order survive), applies every change of
Karpenter's v1 migration guide that can be made on manifests, reports each change, and refuses
(with an error naming the objects) what cannot be migrated automatically.
"""

from agent.api.migration.context import Change, MigrationResult
from agent.api.migration.run import migrate_text

__all__ = ["Change", "MigrationResult", "migrate_text"]
