"""The analyses of the table families with their own (:attr:`TableFamily.analysis`): which kinds a study's answers
are of, and the tables of every family beyond the pair-gap one (a package's, for its own kind), made beside the
generic tables by :func:`counterbench.analyses.study.analyze_study`."""

from __future__ import annotations

from typing import Any

import pandas as pd

from counterbench.analyses.isolation import FailedTables, isolated
from counterbench.analyses.result import AnalysisResult
from counterbench.analyses.table_families import TableFamily, families_for
from counterbench.outcomes import kind_of_answer_type
from counterbench.studies.base import Study

__all__ = ["add_family_tables", "answer_kinds", "kinds_of_answers"]


def answer_kinds(results: pd.DataFrame) -> pd.Series:
    """Each answer's outcome kind (``None``: a store written before kinds existed), decoded once per answer type."""
    if "answer_type" not in results.columns:
        return pd.Series(None, index=results.index, dtype=object)
    answer_types = results["answer_type"]
    kinds = {a: kind_of_answer_type(a) for a in answer_types.dropna().unique() if isinstance(a, str)}
    return answer_types.map(lambda a: kinds.get(a) if isinstance(a, str) else None).astype(object)


def kinds_of_answers(results: pd.DataFrame) -> list[str | None]:
    """The outcome kinds of ``results``' answers, in order of appearance (``[None]``: no ``answer_type``)."""
    return list(dict.fromkeys(answer_kinds(results))) or [None]


def add_family_tables(tables: dict[str, pd.DataFrame], summary: dict[str, Any], results: pd.DataFrame, study: Study,
                       failed: FailedTables, **settings: Any) -> None:
    """The tables of every registered family with an analysis of its own (:attr:`TableFamily.analysis`; a
    package's, for its kind) on the answers of the kinds it covers, beside the generic tables; its table
    descriptions, findings and reasons for empty tables join the summary. One that fails is named in
    ``failed`` and leaves the rest of the analysis standing."""
    if results.empty:
        return
    row_kinds = answer_kinds(results)
    for family in families_for(list(dict.fromkeys(row_kinds))):
        if not family.analysis:
            continue
        rows = results[row_kinds.map(family.analyses).astype(bool)].reset_index(drop=True)

        def build(rows: pd.DataFrame = rows, family: TableFamily = family) -> AnalysisResult | None:
            return family.study_analysis()(rows, study, **settings)  # a package's import fails here too

        part = isolated(tuple(family.tables), build, lambda: None, failed)
        if part is None:
            continue
        tables.update(part.tables)
        for key in ("tables", "unsupported"):
            summary.setdefault(key, {}).update(part.summary.get(key) or {})
        summary["findings"] = [*(summary.get("findings") or []), *(part.summary.get("findings") or [])]
