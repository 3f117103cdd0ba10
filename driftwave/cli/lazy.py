"""Command groups that load when the command line names them.

``driftwave``'s groups (``agent``, ``fleet``, ``rollout``, ...) import what their commands run:
the simulator and the scheduler's solver, the web stack, the AWS and Kubernetes clients, the
fleet database. A :class:`LazyGroup` lists each :class:`Mount` by name with its short help, as
typer would, without importing its module; the module is imported, and its typer app turned
into a click group, only when the group is invoked (``driftwave agent ...``, its help included)
or completed in a shell. ``driftwave --help`` and every other command start without them.

A mount's help is a copy of its group's help, shown in ``driftwave --help``; a unit test checks
that the two agree.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import typer
from typer.core import TyperCommand

from driftwave.cli.group import Group

if TYPE_CHECKING:  # typer's own copy of click, whose classes typer's groups take
    from typer._click import Command, Context


@dataclass(frozen=True)
class Mount:
    """A command group mounted under a name, loaded when invoked."""

    name: str
    target: str
    """Where its typer app is: ``module:attribute``."""
    help: str
    """The group's help, as its typer app has it (the listing shows its first paragraph)."""

    def load(self) -> typer.Typer:
        """Import the module and return the typer app."""
        module, _, attribute = self.target.partition(":")
        app = getattr(importlib.import_module(module), attribute)
        if not isinstance(app, typer.Typer):
            raise TypeError(f"{self.target} is not a typer app")
        return app


class Unloaded(TyperCommand):
    """What a lazy group lists for a mount it has not loaded: its name and help."""

    def __init__(self, mount: Mount) -> None:
        super().__init__(name=mount.name, help=mount.help)
        self.mount = mount


class LazyGroup(Group):
    """A :class:`~driftwave.cli.output.Group` with :attr:`mounts` listed after its own commands (as
    typer lists groups added with ``add_typer``) and loaded when a command line names them."""

    mounts: ClassVar[tuple[Mount, ...]] = ()

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        for mount in self.mounts:
            self.commands[mount.name] = Unloaded(mount)

    def resolve_command(
        self, ctx: Context, args: list[str]
    ) -> tuple[str | None, Command | None, list[str]]:
        """Load the group the command line names (if it is a mount), then resolve as click."""
        if args:
            self.load(args[0])
            if ctx.token_normalize_func is not None:
                self.load(ctx.token_normalize_func(args[0]))
        return super().resolve_command(ctx, args)

    def load(self, name: str) -> None:
        """Replace the mount called ``name``, if not loaded yet, with its click group."""
        found = self.commands.get(name)
        if isinstance(found, Unloaded):
            self.commands[name] = typer.main.get_group(found.mount.load())
