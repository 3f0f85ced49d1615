"""Importers of a study's published run files (``counterbench import PATHS``), found by study name.

A study whose authors published their models' answers registers a function that reads those files
into a store — ``import_runs(paths, store, *, profile, command)`` returning a report with ``lines()``
(what was read and stored, for the terminal) — through the entry-point group
``counterbench.run_importers`` (or :meth:`~counterbench.registry.Registry.register` in code). The
``import`` verb uses the named study's importer (the default study's when none is named).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from counterbench.registry import Registry

__all__ = ["RUN_IMPORTERS"]

#: study name -> the function that imports that study's published run files into a store
RUN_IMPORTERS: Registry[Callable[..., Any]] = Registry(
    "run-file importer", "counterbench.run_importers",
    hint="a study registers one through the entry-point group counterbench.run_importers")
