"""CLI verbs. Each module exposes ``register(app)``; :func:`register_all` wires them up.

Modules are imported here so that a missing optional dependency of one verb cannot break the others
(each module imports heavy or optional libraries inside its functions). A study's own verbs (e.g. a
tool that builds its materials) are registered by the study through the entry-point group
``counterbench.verbs`` (:data:`VERBS`: a name -> a ``register(app)`` function), added after the core's.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

import typer

from counterbench.registry import Registry

#: a study's verbs: name -> ``register(app)`` (entry-point group ``counterbench.verbs``)
VERBS: Registry[Callable[[typer.Typer], None]] = Registry(
    "verb", "counterbench.verbs", hint="a study registers its verbs through the entry-point group counterbench.verbs")

COMMAND_MODULES = (
    "counterbench.commands.prompts_cmd",
    "counterbench.commands.run_cmd",
    "counterbench.commands.store_cmd",
    "counterbench.commands.analyze_cmd",
    "counterbench.commands.report_cmd",
    "counterbench.commands.view_cmd",
    "counterbench.commands.check_cmd",
    "counterbench.commands.power_cmd",
    "counterbench.commands.verify_cmd",
)


def register_all(app: typer.Typer) -> None:
    """Register every verb module listed in :data:`COMMAND_MODULES`, then every study's :data:`VERBS`, on ``app``."""
    for name in COMMAND_MODULES:
        module = importlib.import_module(name)
        module.register(app)
    for name in VERBS.names():
        VERBS.get(name)(app)
