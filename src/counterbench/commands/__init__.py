"""CLI verbs. Each module exposes ``register(app)``; :func:`register_all` wires them up.

Modules are imported here so that a missing optional dependency of one verb cannot break the others
(each module imports heavy or optional libraries inside its functions).
"""

from __future__ import annotations

import importlib

import typer

COMMAND_MODULES = (
    "counterbench.commands.prompts_cmd",
    "counterbench.commands.run_cmd",
    "counterbench.commands.store_cmd",
    "counterbench.commands.analyze_cmd",
    "counterbench.commands.report_cmd",
    "counterbench.commands.view_cmd",
    "counterbench.commands.check_cmd",
    "counterbench.commands.power_cmd",
    "counterbench.commands.hiring_cmd",
    "counterbench.commands.hiring_annotations_cmd",
)


def register_all(app: typer.Typer) -> None:
    """Register every verb module listed in :data:`COMMAND_MODULES` on ``app``."""
    for name in COMMAND_MODULES:
        module = importlib.import_module(name)
        module.register(app)
