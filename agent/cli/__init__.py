"""The agent's command-line commands (validate, migrate), mounted by the root ``driftwave`` CLI."""
