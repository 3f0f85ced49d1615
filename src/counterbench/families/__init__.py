"""The outcome kinds' own families of tables: one package a kind, named after the kind it is keyed by.

A family is the tables one kind's answers get beyond the generic ones every kind shares
(:mod:`counterbench.analyses.table_registry`): their declarations (``tables.py``) and the family object
(``family.py``'s ``FAMILY``, a :class:`counterbench.analyses.table_families.TableFamily`) that names the
analysis making them, the report's sections and methods text, and the gate's rules for them. The built-in
families register in :data:`counterbench.analyses.table_families.FAMILIES` by counterbench's own entry points
(group ``counterbench.table_families`` in ``pyproject.toml``), keyed by their kind, exactly as a package
registers its own; nothing below this package imports it. The report, the gate, the findings and
``counterbench analyze`` choose a family by the analysed kinds, never by whether one of its tables is there.
Only a family's own package names its kind (``tests/test_kind_names.py``).
"""
