"""The typed errors of the fleet's domain: one base, one subclass per thing that can go wrong."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # only named: importing it would load the manifest parser and YAML
    from common.documents import Finding


class DomainError(ValueError):
    """Base of every error the fleet's domain raises: the input broke a rule (permanent)."""


class ManifestError(DomainError):
    """A Fleet or Release manifest file could not be read or broke its rules.

    ``findings`` lists every error (and warning) found, each printable as
    ``FILE:LINE Kind/name: field.path: message``.
    """

    def __init__(self, what: str, findings: list[Finding]) -> None:
        self.findings = findings
        errors = [f for f in findings if f.severity == "error"]
        detail = "; ".join(str(f) for f in errors[:3])
        more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
        super().__init__(f"reading {what}: {detail}{more}")


class PlanningError(DomainError):
    """A Release cannot be planned against a Fleet (it names rings or a fleet the Fleet lacks).

    ``problems`` lists each as (field path in the Release, message).
    """

    def __init__(self, release: str, problems: list[tuple[str, str]]) -> None:
        self.problems = problems
        detail = "; ".join(f"{path}: {message}" for path, message in problems)
        super().__init__(f"planning release {release}: {detail}")


class ScheduleError(DomainError):
    """A maintenance window or a time given to the window functions is unusable."""


class StrategyError(DomainError):
    """A wave strategy or failure budget value is out of its allowed range."""
