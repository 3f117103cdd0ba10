"""``python -m driftwave``: the same as the ``driftwave`` command."""

from driftwave.cli import main

main()
