"""The round-trip side of :mod:`common.yamlsafe`: ruamel's constructor, bounded.

A module of its own so that ruamel loads only with a round trip (``migrate``), not with every
reader of plain data; :func:`common.yamlsafe.load_round_trip` is the way to use it.
"""

from __future__ import annotations

from typing import Any

from ruamel.yaml.constructor import ConstructorError as RuamelConstructorError
from ruamel.yaml.constructor import RoundTripConstructor as RuamelRoundTripConstructor
from ruamel.yaml.error import YAMLError as RuamelYAMLError
from ruamel.yaml.nodes import ScalarNode

from common.yamlsafe import YamlError, unbuildable


class RoundTripConstructor(RuamelRoundTripConstructor):
    """ruamel's round-trip constructor, naming a value it cannot build instead of failing."""

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        """Build ``node``; :class:`~common.yamlsafe.YamlError` names a value that cannot be
        built (its place and tag, never the value)."""
        try:
            return super().construct_object(node, deep=deep)
        except RuamelConstructorError as exc:
            if isinstance(node, ScalarNode):  # its message would echo the value
                raise YamlError(unbuildable(node, None)) from exc
            raise
        except (RuamelYAMLError, YamlError):
            raise
        except Exception as exc:  # a library constructor failing on a value it cannot build
            raise YamlError(unbuildable(node, None)) from exc
