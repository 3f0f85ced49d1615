"""The registry of analysis tables beyond the gaps and levels: one declaration and one function each.

A table is a :class:`TableSpec` — its name, its columns, what one row is, the report's title for it —
and one function that builds it from :class:`TableInputs` (the measured answers of the study's use
cases, the study, the bootstrap settings and the tables built before it). :data:`TABLES` is a
:class:`counterbench.registry.Registry` like the outcome kinds' (group ``counterbench.tables``): a
package registers a table with an entry point, code with ``TABLES.register(name, spec)``, and every
study's generic analysis (:func:`counterbench.analyses.study.analyze_study`) builds it, the analysis
folder holds its CSV, and the report shows it (a section of its own unless ``report_section`` is
false because the report already has one; ``report/sections_registered.py``).

Decisions:

- Tables are built in registry order (code first, then entry points). The per-identity table
  (``outcome_levels``) and the gap table (``outcome_gaps``) are registered first: one slot-cluster
  bootstrap pass gives both, made once through :class:`SharedPasses` (``TableInputs.shared``), so
  every later table can build on them.
- A table is conformed to its declared columns (missing ones are added empty, others dropped); an
  empty table is kept, with ``empty_reason`` (when it has one) in the summary's ``unsupported`` for
  the report.
- A table with a ``model`` column is built on every model's answers at once (its marks are the
  function's business); the amount store path builds it one model at a time, like the gap tables.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, TypeVar

import pandas as pd

from counterbench.analyses import outcome_tables as ot
from counterbench.analyses.crossed_regression import crossed_regression
from counterbench.analyses.direction import favourable_of
from counterbench.analyses.impact_ratios import COLUMNS as IMPACT_COLUMNS
from counterbench.analyses.impact_ratios import DESCRIPTION as IMPACT_DESCRIPTION
from counterbench.analyses.impact_ratios import impact_ratio_table
from counterbench.analyses.isolation import FailedTables, isolated
from counterbench.analyses.names_sample import COLUMNS as NAMES_COLUMNS
from counterbench.analyses.names_sample import DESCRIPTION as NAMES_DESCRIPTION
from counterbench.analyses.names_sample import EMPTY_REASON as NAMES_EMPTY_REASON
from counterbench.analyses.names_sample import TITLE as NAMES_TITLE
from counterbench.analyses.names_sample import group_gaps_over_names
from counterbench.registry import Registry
from counterbench.studies.base import Study

__all__ = ["TABLES", "SharedPasses", "TableInputs", "TableSpec", "build_registered_tables", "build_tables",
           "conform_to", "registered_summary"]

T = TypeVar("T")


class SharedPasses:
    """Work several tables share (the bootstrap pass that gives both ``outcome_levels`` and
    ``outcome_gaps``), done once per analysis: the first table to ask computes it, the others reuse it."""

    def __init__(self) -> None:
        self._done: dict[str, Any] = {}

    def get(self, key: str, compute: Callable[[], T]) -> T:
        """The result of ``compute()`` under ``key``, computed on the first call only."""
        if key not in self._done:
            self._done[key] = compute()
        result: T = self._done[key]
        return result


@dataclass(frozen=True)
class TableInputs:
    """What a table function gets."""

    #: standard-variant answers with status ``ok``: one row per answer (a choice: per offered option) with
    #: ``model``, ``use_case``, ``kind``, ``language``, the facets' columns, ``y`` (the kind's measure),
    #: ``measure`` (its words) and ``unit`` (the unit of a difference)
    rows: pd.DataFrame
    study: Study
    bootstrap: int
    seed: int
    #: the tables built before this one (``outcome_levels``, ``outcome_gaps``, earlier registered ones)
    tables: Mapping[str, pd.DataFrame]
    #: the analysis's shared passes (one for every table of one analysis)
    shared: SharedPasses = field(default_factory=SharedPasses)
    #: the tables that failed so far (name → one-line reason; :mod:`.isolation`)
    failed: FailedTables = field(default_factory=FailedTables)
    #: the standard-variant answers that could not be used (``status`` refused, unparseable, error, ...),
    #: with the same identifying columns as ``rows`` (no ``y``)
    unusable: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: the answers of the study's other prompt variants (``--variant``), measured as ``rows`` and with their
    #: ``variant`` column, for a table that compares a variant with the standard prompts; empty when only the
    #: standard prompts were run (the generic tables read ``rows`` only)
    variant_rows: pd.DataFrame = field(default_factory=pd.DataFrame)


@dataclass(frozen=True)
class TableSpec:
    """One analysis table, declared once."""

    name: str
    columns: tuple[str, ...]
    #: what one row is (the analysis summary's ``tables`` and the report's caption)
    description: str
    build: Callable[[TableInputs], pd.DataFrame]
    #: the report section's heading (default: the name in words)
    title: str = ""
    #: why the table can be empty (the report's note when it is; ``None``: nothing to say)
    empty_reason: str | None = "the answers cannot support this table"
    #: False when the report already has a section of its own for the table
    report_section: bool = True

    @property
    def heading(self) -> str:
        return self.title or self.name.replace("_", " ").capitalize()


def _adapt(name: str, obj: Any) -> TableSpec:
    if not isinstance(obj, TableSpec):
        raise TypeError(f"table {name} must be a counterbench.analyses.table_registry.TableSpec, got {type(obj)}")
    return obj


def _levels_and_gaps(inputs: TableInputs) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The per-identity and gap tables, from one slot-cluster bootstrap pass shared by both."""
    study = inputs.study
    return inputs.shared.get("levels_and_gaps", lambda: ot.level_and_gap_tables(
        inputs.rows, study.facets, list(study.slot_columns), inputs.bootstrap, inputs.seed))


def _language_gaps(inputs: TableInputs) -> pd.DataFrame:
    study = inputs.study
    return ot.language_gap_table(inputs.rows, study.facets, list(study.slot_columns), list(study.languages),
                                 inputs.bootstrap, inputs.seed)


def _crossed_regression(inputs: TableInputs) -> pd.DataFrame:
    return crossed_regression(inputs.rows, inputs.study.facets, list(inputs.study.slot_columns))


def _impact_ratios(inputs: TableInputs) -> pd.DataFrame:
    study = inputs.study
    favourable = favourable_of(study)  # the study's declared directions (hook ``favourable``)
    return impact_ratio_table(inputs.rows, inputs.unusable, study.facets, list(study.slot_columns), inputs.bootstrap,
                              inputs.seed, favourable=favourable)


def _group_gaps_over_names(inputs: TableInputs) -> pd.DataFrame:
    study = inputs.study
    return group_gaps_over_names(inputs.rows, study.facets, list(study.slot_columns),
                                 getattr(study, "counterfactual_column", "identifier") or "identifier")


def _builtin(name: str, build: Callable[[TableInputs], pd.DataFrame], empty_reason: str | None) -> TableSpec:
    columns, description = ot.OUTCOME_TABLES[name]
    return TableSpec(name, columns, description, build, empty_reason=empty_reason, report_section=False)


TABLES: Registry[TableSpec] = Registry("analysis table", "counterbench.tables",
                                       hint="register a TableSpec in counterbench.analyses.table_registry.TABLES")
TABLES.adapt = _adapt
TABLES.register("outcome_levels", _builtin("outcome_levels", lambda inputs: _levels_and_gaps(inputs)[0], None))
TABLES.register("outcome_gaps", _builtin(
    "outcome_gaps", lambda inputs: _levels_and_gaps(inputs)[1],
    "needs a facet's reference and another level answered in the same slots"))
TABLES.register("language_gaps", _builtin(
    "language_gaps", _language_gaps, "needs answers in at least two of the study's languages for the same slots"))
TABLES.register("crossed_regression", _builtin(
    "crossed_regression", _crossed_regression, "only studies with crossed attributes (design.crossed) have it"))
TABLES.register("impact_ratios", TableSpec(
    "impact_ratios", IMPACT_COLUMNS, IMPACT_DESCRIPTION, _impact_ratios,
    title="Selection rates and impact ratios (four-fifths rule)",
    empty_reason="needs answers from at least two categories of one attribute, group or axis"))
TABLES.register("group_gaps_over_names", TableSpec(
    "group_gaps_over_names", NAMES_COLUMNS, NAMES_DESCRIPTION, _group_gaps_over_names, title=NAMES_TITLE,
    empty_reason=NAMES_EMPTY_REASON, report_section=False))


def conform_to(spec: TableSpec, frame: pd.DataFrame | None) -> pd.DataFrame:
    """``frame`` in ``spec``'s columns (an empty frame of them when there is none)."""
    if frame is None or frame.empty:
        return pd.DataFrame({c: pd.Series(dtype="float64") for c in spec.columns})
    return frame.reindex(columns=list(spec.columns)).reset_index(drop=True)


def build_registered_tables(inputs: TableInputs) -> dict[str, pd.DataFrame]:
    """Every registered table, in registry order (each sees the ones before it). Each is built in
    isolation: one that raises is left empty and named in ``inputs.failed`` with its reason."""
    return build_tables([TABLES.get(name) for name in TABLES.names()], inputs)


def build_tables(specs: Sequence[TableSpec], inputs: TableInputs) -> dict[str, pd.DataFrame]:
    """The tables ``specs`` declare, in order, as :func:`build_registered_tables` builds the registered ones
    (a study's own tables, its ``study_tables`` hook, go through here too)."""
    built: dict[str, pd.DataFrame] = dict(inputs.tables)
    out: dict[str, pd.DataFrame] = {}
    for spec in specs:
        name = spec.name
        step = replace(inputs, tables=built)
        made: pd.DataFrame | None = isolated(name, partial(spec.build, step), lambda: None, inputs.failed)
        frame = conform_to(spec, made)
        built[name] = out[name] = frame
    return out


def registered_summary(tables: Mapping[str, pd.DataFrame], own: Sequence[TableSpec] = ()) -> dict[str, Any]:
    """The summary's part for the registered tables and a study's ``own``: descriptions, why empty ones are
    empty, and the headings of those the report shows in a section of their own (``added_tables``)."""
    specs = [*(TABLES.get(name) for name in TABLES.names()), *own]
    specs = [s for s in specs if s.name in tables]
    return {
        "tables": {s.name: s.description for s in specs},
        "unsupported": {s.name: s.empty_reason for s in specs if tables[s.name].empty and s.empty_reason},
        "added_tables": {s.name: {"title": s.heading, "description": s.description}
                         for s in specs if s.report_section},
    }
