"""Which outcome kinds an analysis holds, and so which kind-keyed table families apply to it.

The report, the gate, the findings and ``counterbench analyze`` choose a family's sections, rules and
printouts by the kinds of the study's use cases (the summary's ``outcome_kinds``), never by whether one of
its tables is there. An analysis without ``outcome_kinds`` (the amount analysis called alone, a folder
written before kinds existed) names its kinds in the generic tables' ``kind`` column; with neither, its
answers are of the kind a store written before kinds existed holds (``outcomes.has_pair_tables(None)``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from counterbench.outcomes import has_pair_tables

__all__ = ["analysed_kinds", "pair_tables_apply"]

#: the generic tables whose ``kind`` column names the kinds of an analysis that does not list them
_KIND_TABLES = ("outcome_levels", "outcome_gaps")


def analysed_kinds(summary: Mapping[str, Any], tables: Mapping[str, pd.DataFrame]) -> list[str | None]:
    """The outcome kinds of the analysed use cases, in study order: the summary's ``analysed_kinds`` (the kinds
    whose tables came out; :func:`counterbench.analyses.study.analyze_study`), else its ``outcome_kinds``, else
    the generic tables' ``kind`` columns (``[None]``: an analysis that names none)."""
    analysed = summary.get("analysed_kinds")
    if isinstance(analysed, list):
        return [str(k) for k in analysed]
    kinds = summary.get("outcome_kinds")
    if isinstance(kinds, Mapping) and kinds:
        return list(dict.fromkeys(str(k) for k in kinds.values()))
    found = [str(k) for name in _KIND_TABLES if (frame := tables.get(name)) is not None and "kind" in frame.columns
             for k in frame["kind"].dropna().unique()]
    return list(dict.fromkeys(found)) or [None]


def pair_tables_apply(kinds: Iterable[str | None]) -> bool:
    """Whether the pair-gap (amount) tables analyse any of ``kinds``."""
    return any(has_pair_tables(k) for k in kinds)
