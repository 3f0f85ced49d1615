"""The model comparison in an analysis: its two tables, their summary entries and the findings in words.

:func:`add_model_comparison` is called once an analysis has every model's tables (the joint analysis and
the one-model-at-a-time analysis of an amount store alike), with every model's slot summaries
(:mod:`.model_summaries`); it adds ``model_differences`` and ``model_ranks`` (:mod:`.model_compare`),
puts the joint rank interval of Mean Δ% beside the leaderboard's rank, and writes one sentence per pair
of models.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from counterbench.analyses.answer_checks import flagged_reasons
from counterbench.analyses.flags import truthy
from counterbench.analyses.model_compare import (
    DIFFERENCE_DESCRIPTION,
    RANK_DESCRIPTION,
    compare_models,
    headline_measures,
)
from counterbench.analyses.model_summaries import ModelSummary
from counterbench.analyses.table_families import analysed_kinds, pair_tables_apply
from counterbench.studies.base import Study

__all__ = ["COMPARISON_TABLES", "add_model_comparison", "comparison_findings"]

#: table -> (report title, description)
COMPARISON_TABLES = {
    "model_differences": ("Differences between models (paired)", DIFFERENCE_DESCRIPTION),
    "model_ranks": ("Model ranks with joint 95% rank intervals", RANK_DESCRIPTION),
}
_WHY_EMPTY = ("needs at least two models that answered the same slots and a headline measure (Mean Δ% or a canonical "
              "pair gap of amounts, a canonical or marked gap of another kind)")


def _value(v: float, unit: str, signed: bool = True) -> str:
    text = f"{v:+.1f}" if signed else f"{v:.1f}"
    return f"{text}%" if unit.startswith("%") else f"{text} {unit}".rstrip()


def _points(unit: str) -> str:
    return "points" if unit.startswith("%") else unit


def _where(row: Mapping[Any, Any], names: Mapping[str, str]) -> str:
    bits = [str(row["facet"])] if row["measure"] != "mean_delta" else []
    use_case, language = row.get("use_case"), row.get("language")
    if isinstance(use_case, str) and use_case:
        bits.append(names.get(use_case, use_case.replace("_", " ")))
    if isinstance(language, str) and language:
        bits.append(names.get(language, language))
    return f" ({', '.join(bits)})" if bits else ""


def _sentence(row: Mapping[Any, Any], names: Mapping[str, str], marked: int, tested: int) -> str:
    a, b = str(row["model_a"]), str(row["model_b"])
    ea, eb = float(row["estimate_a"]), float(row["estimate_b"])
    small, large, es, el = (a, b, ea, eb) if abs(ea) <= abs(eb) else (b, a, eb, ea)
    sign = 1.0 if large == a else -1.0  # the difference as large − small
    low, high = sorted((sign * float(row["ci_low"]), sign * float(row["ci_high"])))
    unit = str(row["unit"])
    signed = row["measure"] != "mean_delta"
    label = "Mean Δ%" if row["measure"] == "mean_delta" else f"{row['comparison']} vs {row['reference']} gap" + (
        " from log-probabilities" if row["measure"] == "p_gap" else "")
    return (f"{small} and {large} differ on {marked} of {tested} headline measures; the largest: {small}'s {label}"
            f"{_where(row, names)} is smaller than {large}'s ({_value(es, unit, signed)} against "
            f"{_value(el, unit, signed)}; {large} − {small} {sign * float(row['difference']):+.1f} {_points(unit)}, "
            f"95% CI {low:+.1f} to {high:+.1f}).")


def comparison_findings(differences: pd.DataFrame, names: Mapping[str, str] | None = None,
                        skip: set[str] | None = None) -> list[str]:
    """One sentence per pair of models (``skip``: models left out, e.g. flagged ones): the largest marked
    difference, or that the two do not differ beyond noise on the headline measures tested."""
    words = dict(names or {})
    out: list[str] = []
    if differences is None or differences.empty:
        return out
    for (a, b), rows in differences.groupby(["model_a", "model_b"], sort=False):
        if {str(a), str(b)} & (skip or set()):
            continue
        tested = int(sum(truthy(v) for v in rows["testable"]))
        if not tested:
            continue
        marked = rows[[truthy(v) for v in rows["significant"]]]
        if marked.empty:
            out.append(f"{a} and {b} do not differ beyond noise on any of {tested} headline measure"
                       f"{'s' if tested != 1 else ''} tested (paired on the slots both answered).")
            continue
        size = (marked["difference"].abs() / (marked["ci_high"] - marked["ci_low"]).abs().replace(0, np.nan))
        top = marked.iloc[int(np.argmax(size.fillna(np.inf).to_numpy()))]
        out.append(_sentence(top.to_dict(), words, len(marked), tested))
    return out


def _with_rank_intervals(board: pd.DataFrame, ranks: pd.DataFrame) -> pd.DataFrame:
    """The leaderboard with ``rank_low``/``rank_high``: the joint rank interval of Mean Δ%."""
    mean = ranks[ranks["measure"].astype(str).eq("mean_delta")] if not ranks.empty else ranks
    if board.empty or mean.empty:
        return board
    by_model = mean.set_index(mean["model"].astype(str))
    out = board.copy()
    for col in ("rank_low", "rank_high"):
        out[col] = pd.array([by_model[col].get(str(m), pd.NA) for m in out["model"]], dtype="Int64")
    return out


def add_model_comparison(tables: dict[str, pd.DataFrame], summary: dict[str, Any],
                         summaries: Mapping[str, ModelSummary], study: Study, *, bootstrap: int, seed: int) -> None:
    """Add the comparison tables, their summary entries and sentences to an analysis (in place)."""
    order = [m for m in summary.get("models", {}) if m in summaries] + \
        [m for m in summaries if m not in summary.get("models", {})]
    ordered = {m: summaries[m] for m in order}
    keys = [k for s in ordered.values() for k in s]
    flagged = {m: "; ".join(f"{uc}: {why}" for uc, why in items)
               for m, items in flagged_reasons(tables.get("answer_checks")).items()}
    measures = headline_measures(keys, tables.get("outcome_gaps"), tables.get("probability_gaps"),
                                 tables.get("decision_measures"))
    differences, ranks = compare_models(ordered, measures, n_boot=bootstrap, seed=seed, flagged=flagged)
    tables["model_differences"], tables["model_ranks"] = differences, ranks
    if pair_tables_apply(analysed_kinds(summary, tables)):  # the amount kind's leaderboard
        tables["leaderboard"] = _with_rank_intervals(tables["leaderboard"], ranks)
    summary.setdefault("tables", {}).update({name: desc for name, (_, desc) in COMPARISON_TABLES.items()})
    unsupported = summary.setdefault("unsupported", {})
    for name in COMPARISON_TABLES:  # the report's own sections show them (report/sections_models.py)
        if tables[name].empty:
            unsupported[name] = _WHY_EMPTY
        else:
            unsupported.pop(name, None)
    summary.setdefault("marks", {}).setdefault("families", {})["model_differences"] = (
        "one pair of models (its headline measures)")
    summary.setdefault("ci_methods", {})["model_differences"] = (
        f"paired slot bootstrap ({bootstrap} replicates, seed {seed}): both models' totals from the same slot draws "
        "on the slots both answered, ±t·se with the small-sample factor and degrees of freedom; p: the larger of the "
        "swap test's (the two models exchanged slot by slot) and the interval's t-test's; model_ranks: joint 95% "
        "rank intervals from simultaneous max-t intervals of every pairwise difference in size")
    names = {**dict(study.languages), **dict(getattr(study, "use_case_labels", {}) or {})}
    summary["findings"] = [*summary.get("findings", []),
                           *comparison_findings(differences, names, skip=set(flagged))]
