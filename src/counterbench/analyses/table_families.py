"""The kind-keyed table families, and which of them an analysis's outcome kinds call for.

A family (:class:`TableFamily`) is the tables one outcome kind's answers get beyond the generic ones every kind
shares (:mod:`.table_registry`), declared once in the kind's package under ``counterbench/families/`` (the
amount kind's: :mod:`counterbench.families.amount`). :data:`FAMILIES` is a :class:`counterbench.registry.Registry`
like the kinds' and the tables' (group ``counterbench.table_families``), keyed by the kind a family belongs to;
the built-in ones register through counterbench's own entry points in that group, exactly as a package's do,
so nothing below the families imports them. A family with its own analysis names it (:attr:`TableFamily.analysis`,
:attr:`TableFamily.analysis_by_model`); :func:`counterbench.analyses.study.analyze_study` finds it by the
answers' kinds (:func:`analysing_family`).

The report, the gate, the findings and ``counterbench analyze`` choose a family's sections, rules and printouts
by the analysed kinds (:func:`analysed_kinds`: the summary's ``analysed_kinds``, the kinds whose tables came
out, else its ``outcome_kinds``), never by whether one of its tables is there. An analysis that names no kind
(the amount analysis called alone, a folder written before kinds existed) names them in the generic tables'
``kind`` column; with neither, its answers are of the kind a store written before kinds existed holds
(``outcomes.has_pair_tables(None)``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import pandas as pd

from counterbench.analyses.result import AnalysisResult
from counterbench.errors import UserError
from counterbench.outcomes import has_pair_tables
from counterbench.registry import Registry, load_reference
from counterbench.studies.base import Study

__all__ = ["FAMILIES", "FamilyAnalysis", "FamilyAnalysisByModel", "MapModels", "TableFamily", "analysed_kinds",
           "analysing_family", "families_for", "pair_tables_apply"]


class FamilyAnalysis(Protocol):
    """A family's tables of a study's answers of its kinds (every model at once)."""

    def __call__(self, results: pd.DataFrame, study: Study, *, profile: str, bootstrap: int, seed: int,
                 tau: float, canonical_pairs: Mapping[str, tuple[str, str]]) -> AnalysisResult: ...


#: ``map_models(task, models)``: ``[task(m) for m in models]``, perhaps in worker processes (each result must
#: pickle; ``task`` calls ``load`` and ``extra_tables`` itself)
MapModels = Callable[[Callable[[str], Any], Sequence[str]], list[Any]]


class FamilyAnalysisByModel(Protocol):
    """The same, one model's answers at a time (``load(model)``); ``extra_tables`` adds per-model tables;
    each model's share runs through ``map_models`` (models side by side, in worker processes)."""

    def __call__(self, load: Callable[[str], pd.DataFrame], models: Sequence[str], study: Study, *, profile: str,
                 bootstrap: int, seed: int, tau: float, canonical_pairs: Mapping[str, tuple[str, str]],
                 extra_tables: Callable[[pd.DataFrame], Mapping[str, pd.DataFrame]] | None = None,
                 map_models: MapModels | None = None) -> AnalysisResult: ...


@dataclass(frozen=True)
class TableFamily:
    """One kind's tables, declared once, and what the layers above do with them (by reference, loaded on use)."""

    #: the kind it belongs to (its key in :data:`FAMILIES`)
    kind: str
    #: table name -> its columns (templates allowed; the family's ``table_columns`` expands them)
    tables: Mapping[str, tuple[str, ...]]
    #: table name -> what one row is
    descriptions: Mapping[str, str]
    #: whether the family analyses answers of a kind (default: its own kind only; ``None`` is a store's
    #: answers written before kinds existed)
    covers: Callable[[str | None], bool] | None = None
    #: ``module:attribute`` of the report's section builders for the family (each takes the report context)
    report_sections: str = ""
    #: ``module:attribute`` of the report's words on how the family's numbers are made (the Methods section)
    report_methods: str = ""
    #: ``module:attribute`` of the gate's rules for the family: ``rules(model, tables, thresholds)`` → outcomes
    gate_rules: str = ""
    #: table name -> what run would fill it, when the data cannot support it
    hints: Mapping[str, str] = field(default_factory=dict)
    #: ``module:attribute`` of its analysis of a study's answers (a :class:`FamilyAnalysis`); empty: its
    #: tables are made by the generic table registry
    analysis: str = ""
    #: ``module:attribute`` of the same analysis one model at a time (a :class:`FamilyAnalysisByModel`)
    analysis_by_model: str = ""

    def analyses(self, kind: str | None) -> bool:
        """Whether the family's tables analyse answers of ``kind``."""
        return self.covers(kind) if self.covers is not None else kind == self.kind

    def study_analysis(self) -> FamilyAnalysis:
        """Its analysis of a study's answers (loaded on first use)."""
        loaded: FamilyAnalysis = load_reference(self.analysis)
        return loaded

    def study_analysis_by_model(self) -> FamilyAnalysisByModel:
        """Its analysis one model at a time (loaded on first use)."""
        loaded: FamilyAnalysisByModel = load_reference(self.analysis_by_model)
        return loaded


def _adapt(name: str, obj: Any) -> TableFamily:
    if not isinstance(obj, TableFamily):
        raise TypeError(f"table family {name} must be a counterbench.analyses.table_families.TableFamily, "
                        f"got {type(obj)}")
    return obj


FAMILIES: Registry[TableFamily] = Registry(
    "table family", "counterbench.table_families",
    hint="register a TableFamily in counterbench.analyses.table_families.FAMILIES under its kind's name")
FAMILIES.adapt = _adapt

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


def families_for(kinds: Iterable[str | None]) -> list[TableFamily]:
    """The registered families that analyse any of ``kinds``, in registry order."""
    wanted = list(kinds)
    families = [FAMILIES.get(name) for name in FAMILIES.names()]
    return [f for f in families if any(f.analyses(k) for k in wanted)]


def analysing_family(kinds: Iterable[str | None], *, by_model: bool = False) -> TableFamily:
    """The first registered family with its own analysis (one model at a time, with ``by_model``) that analyses
    any of ``kinds``; a :class:`~counterbench.errors.UserError` when none does (a package's kind declared
    ``pair_tables`` and no family was installed)."""
    wanted = list(kinds)
    for family in families_for(wanted):
        if family.analysis_by_model if by_model else family.analysis:
            return family
    shown = ", ".join(str(k) for k in wanted)
    raise UserError(f"no table family analyses answers of kind {shown}; a package registers one in the entry-point "
                    f"group counterbench.table_families")


def pair_tables_apply(kinds: Iterable[str | None]) -> bool:
    """Whether the pair-gap (amount) tables analyse any of ``kinds`` (the kind's ``pair_tables``)."""
    return any(has_pair_tables(k) for k in kinds)
