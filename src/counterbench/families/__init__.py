"""The outcome kinds' own families of tables: one package a kind, named after the kind it is keyed by.

A family is the tables one kind's answers get beyond the generic ones every kind shares
(:mod:`counterbench.analyses.table_registry`): their declarations (``tables.py``) and the family object
(``family.py``'s ``FAMILY``, a :class:`counterbench.analyses.table_families.TableFamily`) that names the
analysis making them, the report's sections and methods text, and the gate's rules for them. The built-in
families are registered by :data:`BUILTIN_FAMILIES` in :data:`counterbench.analyses.table_families.FAMILIES`,
keyed by their kind; a package registers its own there (entry-point group ``counterbench.table_families``).
The report, the gate, the findings and ``counterbench analyze`` choose a family by the analysed kinds, never by
whether one of its tables is there. Only a family's own package names its kind (``tests/test_kind_names.py``).
"""

from __future__ import annotations

__all__ = ["BUILTIN_FAMILIES"]

#: the built-in families, each keyed by the kind it belongs to (``counterbench.families.<kind>.family:FAMILY``)
BUILTIN_FAMILIES = ("amount",)
