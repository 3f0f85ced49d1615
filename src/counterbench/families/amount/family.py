"""The amount kind's family, registered in :data:`counterbench.analyses.table_families.FAMILIES` under ``amount``
by counterbench's own entry point (group ``counterbench.table_families`` in ``pyproject.toml``), as a package
registers its own.

It analyses every kind whose ``pair_tables`` is true (``amount`` says so; a store written before kinds
existed holds amounts): :func:`counterbench.families.amount.analysis.analyze` makes its tables (called for a
study through :mod:`counterbench.families.amount.study_analysis`), the report shows them
in its amount sections (``report/sections.py``) and the gate judges them by the amount rules (overall Mean Δ%
when asked, canonical pair gaps; ``gate/checks.py``).
"""

from __future__ import annotations

from counterbench.analyses.table_families import TableFamily
from counterbench.families.amount.tables import TABLE_COLUMNS, TABLE_DESCRIPTIONS, UNSUPPORTED_HINTS
from counterbench.outcomes import has_pair_tables

__all__ = ["FAMILY"]

FAMILY = TableFamily(
    "amount", TABLE_COLUMNS, TABLE_DESCRIPTIONS, covers=has_pair_tables,
    report_sections="counterbench.report.sections:SECTION_BUILDERS",
    report_methods="counterbench.report.provenance:AMOUNT_METHODS",
    gate_rules="counterbench.gate.checks:amount_rules",
    hints=UNSUPPORTED_HINTS,
    analysis="counterbench.families.amount.study_analysis:analyze_study_answers",
    analysis_by_model="counterbench.families.amount.study_analysis:analyze_study_by_model",
)
