"""Every manifest kind ``driftwave validate`` checks: the agent's and the fleet's (Fleet and
Release), the fleet's models (and the agent's Scenario) imported only when a document is one of
them.

Most files checked are Karpenter's and Kubernetes' manifests; the fleet's models (and their
linter) and the Scenario's then need not load. :data:`FLEET_KINDS` names the fleet's kinds by
(apiVersion, kind), so an unknown kind's message still lists them; a unit test checks it against
:func:`fleet.domain.manifests.fleet_kinds`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from agent.api.kinds import SCENARIO_KIND, manifest_kinds
from agent.api.lint import LintWarning
from common.documents import Document, Finding, KindKey, Linter
from common.kubemodel import KubeModel

if TYPE_CHECKING:
    from agent.api.scenario import Scenario


def check_scenario(
    path: Path, doc: Document, scenario: Scenario, linters: Iterable[Linter] = ()
) -> tuple[list[KubeModel], list[Finding]]:
    """A Scenario checked whole, as ``agent simulate`` reads it
    (:func:`agent.sim.scenario_check.scenario_objects`, loaded only when a document is one): the
    :data:`agent.api.validate.ScenarioCheck` that ``validate`` and ``agent hash`` pass in."""
    from agent.sim.scenario_check import scenario_objects

    return scenario_objects(path, doc, scenario, linters)


FLEET_API_VERSION = "driftwave.io/v1alpha1"
FLEET_KINDS: tuple[KindKey, ...] = ((FLEET_API_VERSION, "Fleet"), (FLEET_API_VERSION, "Release"))
"""The kinds :func:`fleet.domain.manifests.fleet_kinds` maps."""


class Kinds(Mapping[KindKey, type[KubeModel]]):
    """The agent's kinds and the fleet's (which take precedence, as in ``{**agent, **fleet}``),
    mapped to their models; the fleet's models load at the first look-up of one of them, the
    agent's Scenario at the first look-up of it."""

    def __init__(self) -> None:
        self.agent = manifest_kinds()
        """The agent's kinds but the Scenario (:data:`agent.api.kinds.SCENARIO_KIND`)."""
        self.fleet_loaded = False

    def __getitem__(self, key: KindKey) -> type[KubeModel]:
        if key in FLEET_KINDS:
            from fleet.domain.manifests import fleet_kinds

            self.fleet_loaded = True
            return fleet_kinds()[key]
        if key == SCENARIO_KIND:
            from agent.api.scenario import Scenario

            return Scenario
        return self.agent[key]

    def __contains__(self, key: object) -> bool:
        return key in FLEET_KINDS or key == SCENARIO_KIND or key in self.agent

    def __iter__(self) -> Iterator[KindKey]:
        yield from (key for key in self.agent if key not in FLEET_KINDS)
        yield SCENARIO_KIND
        yield from FLEET_KINDS

    def __len__(self) -> int:
        return len(self.agent.keys() | {SCENARIO_KIND} | set(FLEET_KINDS))

    def fleet_lint(self, obj: KubeModel) -> Iterator[LintWarning]:
        """The fleet linter's warnings for ``obj``: none before a fleet model was looked up (only
        a Fleet or a Release, which only a look-up here makes, has any)."""
        if not self.fleet_loaded:
            return
        from fleet.domain.lint import fleet_lint

        yield from fleet_lint(obj)
