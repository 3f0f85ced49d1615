"""The amount family's analysis of one study's answers: what :attr:`TableFamily.analysis` and
:attr:`TableFamily.analysis_by_model` name for the ``amount`` kind (``family.py``).

:func:`counterbench.analyses.study.analyze_study` calls them through the family registry, so the core never
imports this package: it hands over the study, and the family takes from it what its tables need (the
languages and largest axes that name the per-language columns, :func:`table_layout`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import pandas as pd

from counterbench.analyses.result import AnalysisResult
from counterbench.analyses.table_families import MapModels
from counterbench.families.amount.analysis import analyze
from counterbench.families.amount.by_model import analyze_by_model
from counterbench.families.amount.tables import TableLayout
from counterbench.studies.base import Study

__all__ = ["analyze_study_answers", "analyze_study_by_model", "table_layout"]


def table_layout(study: Study) -> TableLayout:
    """The study's languages and axis sizes, which name the amount tables' per-language columns."""
    sizes = [(f.axis or f.name, len(f.levels)) for f in study.facets if f.kind == "axis"]
    return TableLayout.of(list(study.languages), sizes)


def analyze_study_answers(results: pd.DataFrame, study: Study, *, profile: str, bootstrap: int, seed: int,
                          tau: float, canonical_pairs: Mapping[str, tuple[str, str]]) -> AnalysisResult:
    """The amount tables of ``study``'s amount answers (every model at once)."""
    return analyze(results, profile=profile, bootstrap=bootstrap, seed=seed, tau=tau,
                   canonical_pairs=canonical_pairs, layout=table_layout(study))


def analyze_study_by_model(load: Callable[[str], pd.DataFrame], models: Sequence[str], study: Study, *,
                           profile: str, bootstrap: int, seed: int, tau: float,
                           canonical_pairs: Mapping[str, tuple[str, str]],
                           extra_tables: Callable[[pd.DataFrame], Mapping[str, pd.DataFrame]] | None = None,
                           map_models: MapModels | None = None) -> AnalysisResult:
    """The amount tables of ``study``, ``models`` one at a time (``load(model)`` gives that model's answers;
    ``extra_tables`` adds more per-model tables from the same answers; ``map_models`` runs each model's share)."""
    return analyze_by_model(load, list(models), profile=profile, bootstrap=bootstrap, seed=seed, tau=tau,
                            canonical_pairs=canonical_pairs, layout=table_layout(study), extra_tables=extra_tables,
                            map_models=map_models)
