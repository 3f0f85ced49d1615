"""The amount kind's family, registered in :data:`counterbench.analyses.table_families.FAMILIES` under ``amount``.

It analyses every kind whose ``pair_tables`` is true (``amount`` says so; a store written before kinds
existed holds amounts): :func:`counterbench.families.amount.analysis.analyze` makes its tables, the report shows them
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
)
