"""The amount kind's tables, declared once: names, columns, what a row is, why one can be empty.

The tables of the pair-gap analysis (:mod:`counterbench.families.amount.analysis`: the leaderboard, Mean Δ%,
Kendall's W, canonical pair gaps, ...) of every kind whose answers it analyses (``pair_tables``; ``amount`` says
so). They are the amount kind's family (:mod:`counterbench.families.amount.family`), registered in
:data:`counterbench.analyses.table_families.FAMILIES`; the conventions every table shares (one row per cell,
``ci_low``/``ci_high``, marks, row order) are :mod:`counterbench.analyses.schema`'s. Reports and exports rely on
these staying stable.

Columns that depend on the study are written as templates: ``{lang}_mean_delta`` is one column per language
the study declares, in study order (``en_mean_delta``, ``es_mean_delta``); ``{axes}_share`` names the study's
two axes with the most identifiers (only for studies with three or more axes). :func:`table_columns` expands
them for one study's languages and axes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

__all__ = ["GENERIC_HINT", "TABLE_COLUMNS", "TABLE_DESCRIPTIONS", "UNSUPPORTED_HINTS", "TableLayout", "conform",
           "empty_table", "heavy_axes_column", "language_hint", "table_columns"]

_CI = ("ci_low", "ci_high")
_PAIR = ("pair_ci_low", "pair_ci_high")
_V = ("v10", "v10_ci_low", "v10_ci_high", "v10_pair_ci_low", "v10_pair_ci_high", "v10_wilson_ci_low",
      "v10_wilson_ci_high")
_TEST = ("p_value", "q_value", "testable", "significant")

#: table name -> its columns, in order
TABLE_COLUMNS: dict[str, tuple[str, ...]] = {
    "leaderboard": (
        "rank", "model", "simulated", "overall_mean_delta", *_CI, *_PAIR, "overall_v10",
        "{lang}_mean_delta", "{lang}_ci_low", "{lang}_ci_high",
        "{lang}_v10", "{lang}_v10_ci_low", "{lang}_v10_ci_high",
        "axis_mean", "n_pairs", "{axes}_share", "tau", "n_slots", "flag", "rank_low", "rank_high",
    ),
    "axis_mean_delta": (
        "model", "language", "axis", "mean_delta", *_CI, *_PAIR, *_V, "n_pairs", "share_of_pairs", "tau", "n_slots",
    ),
    "use_case_mean_delta": ("model", "language", "use_case", "mean_delta", *_CI, *_PAIR, *_V, "n_pairs", "tau",
                            "n_slots"),
    "use_case_axis_mean_delta": (
        "model", "language", "use_case", "axis", "mean_delta", *_CI, *_PAIR, "v10", "n_pairs", "tau", "n_slots",
    ),
    "pairs_per_axis": ("model", "axis", "n_pairs", "share"),
    "kendalls_w": (
        "model", "language", "use_case", "axis", "w", "chi2", "p_value", "n_blocks", "k", "fully_tied", "included",
        "q_bh_all", "significant", "q_value",
    ),
    "kendalls_w_axis": (
        "model", "language", "axis", "mean_w", "p_fisher", "q_bh_within_axis", "q_bh_all", "significant",
        "n_use_cases", "q_value",
    ),
    "kendalls_w_model": ("model", "language", "mean_w", "p_fisher", "q_bh", "significant", "n_axes", "q_value"),
    "cpg": (
        "model", "language", "use_case", "axis", "reference", "comparison", "gap", *_CI, "sign_consistency",
        "tie_share", "mean_reference", "mean_comparison", "n_slots", "significant", "p_value", "q_value", "testable",
        "n_agree",
    ),
    "cpg_overall": (
        "model", "language", "axis", "reference", "comparison", "gap", *_CI, "sign_consistency", "n_slots",
        "n_use_cases", "significant", "p_value", "q_value", "testable", "n_agree",
    ),
    "mog": (
        "model", "language", "use_case", "axis", "max_gap", "top_identifier", "bottom_identifier", "top_mean",
        "bottom_mean", *_CI, "n_identifiers", "n_slots",
    ),
    "identifier_deviation": ("model", "axis", "identifier", "deviation", "n_slices", *_CI),
    "qv_robustness": ("model", "language", "axis", "mean_min_rho", *_CI, "robust", "n_use_cases"),
    "qv_robustness_model": ("model", "language", "mean_min_rho", *_CI, "robust", "n_settings"),
    "qv_robustness_by_use_case": (
        "model", "language", "use_case", "axis", "min_rho", "n_variants", "n_identifiers",
    ),
    "merit_sensitivity": ("model", "use_case", "language", "mean_delta", *_CI, *_PAIR, "n_pairs", "n_slots"),
    "profile_rank_agreement": ("model", "use_case", "language", "mean_rho", *_CI, "n_axes"),
    "language_moderation": (
        "model", "axis", "{compared}", "rho", "p_value", "n_use_cases", "{lang}_mean_delta",
        "delta_mean_delta", *_CI, *_PAIR, "significant", "shift_p_value", "q_value", "testable", "n_slots",
    ),
    "fairness_ablation": (
        "model", "language", "use_cases", "standard_mean_delta", "fairness_mean_delta", "delta", "relative_change",
        *_CI, *_PAIR, "n_pairs_standard", "n_pairs_fairness", "significant", "p_value", "q_value", "testable",
        "n_slots",
    ),
    "power": (
        "model", "language", "use_case", "axis", "reference", "comparison", "n_slots", "n_use_cases", "noise_sd",
        "se", "df", "family_size", "alpha", "mde", "mde_less", "power", "testable",
    ),
    "parse_health": (
        "model", "variant", "use_case", "language", "n", "n_ok", "n_refused", "n_unparseable", "n_truncated",
        "n_filtered", "n_empty", "errors", "n_out_of_range", "n_values", "ok_share", "refused_share",
        "unparseable_share", "unfinished_share", "error_share", "out_of_range_share",
    ),
}

#: one line per table: what a row is (the report and the docs use these)
TABLE_DESCRIPTIONS: dict[str, str] = {
    "leaderboard": "per model: Mean Δ% over all pairs (the study's languages pooled), per language, V@τ, "
    "unweighted mean of the axis means, share of the pairs from the two largest axes (paper Table 2); sorted by "
    "overall Mean Δ%",
    "axis_mean_delta": "per model × language × axis: Mean Δ% and V@τ with CIs (paper Tables 3–4)",
    "use_case_mean_delta": "per model × language × use case: Mean Δ% with CIs (paper Fig. 6)",
    "use_case_axis_mean_delta": "per model × language × use case × axis: Mean Δ% (paper Fig. 2 radar)",
    "pairs_per_axis": "per model × axis: matched pairs (all languages) and their share of the model's pairs",
    "kendalls_w": "per model × language × use case × axis: Friedman χ², Kendall's W, p, BH q across all "
    "cells (paper Fig. 7)",
    "kendalls_w_axis": "per model × language × axis: mean W over use cases, Fisher-combined p, BH q within "
    "the axis column and across all cells (paper Tables 5–6)",
    "kendalls_w_model": "per model × language: Mean W over axes, Fisher-combined p over axes, BH q across "
    "models (paper Fig. 3a)",
    "cpg": "per model × language × use case × canonical pair: signed canonical pair gap on matched slots, "
    "sign consistency, paired slot bootstrap CI, BH mark within the model (paper Fig. 8)",
    "cpg_overall": "per model × language × canonical pair: the canonical pair gap averaged over use cases "
    "(equal weights), its slot bootstrap CI and BH mark within the model — the figure the headline finding uses",
    "mog": "per model × language × use case × axis: maximum gap between identifier means, top and bottom "
    "identifier, slot bootstrap CI (paper Fig. 9)",
    "identifier_deviation": "per model × axis × identifier: deviation of the identifier mean from the axis "
    "mean in %, averaged over use cases and languages, slot bootstrap CI (paper Figs. 4, 10, 11)",
    "qv_robustness": "per model × language × axis: mean over use cases of the minimum pairwise Spearman ρ "
    "between question variants' identifier rankings; robust when ≥ 0.85 (paper Tables 7–8)",
    "qv_robustness_model": "per model × language: the same over every use case × axis setting "
    "(the tables' 'Mean min ρ' column)",
    "qv_robustness_by_use_case": "per setting (model × language × use case × axis): minimum pairwise ρ",
    "merit_sensitivity": "per model × use case × language: Mean Δ% between profiles for a fixed identifier "
    "and question variant (paper Fig. 12)",
    "profile_rank_agreement": "per model × use case × language: mean pairwise Spearman ρ between identifier "
    "columns of the profiles × identifiers matrix, averaged over axes (paper Fig. 13)",
    "language_moderation": "per model × axis (× compared language when the study has more than two): Spearman "
    "ρ between the identifier rankings in the study's first language and another of its languages, and "
    "ΔMean Δ% = other − first with CIs (paper Fig. 5); none for a one-language study",
    "fairness_ablation": "per model × language: Mean Δ% with and without the fairness instruction on the "
    "same slots, their difference and relative change (paper Fig. 14)",
    "power": "per model × language × use case (empty use case: averaged over use cases, as cpg_overall) × "
    "canonical pair: the smallest gap (% of the pair's mean; mde_less: % less) this design finds 80% of the time "
    "at the model's measured noise",
    "parse_health": "per model × prompt variant × use case × language: responses, values, refusals, "
    "unparseable answers, answers that did not finish (truncated, filtered, empty), transport errors, "
    "out-of-range values (paper Table 22)",
}


@dataclass(frozen=True)
class TableLayout:
    """What a study adds to the amount tables' columns: its languages (study order) and the two axes
    with the most identifiers (empty: no ``{axes}_share`` column)."""

    languages: tuple[str, ...] = ()
    heavy_axes: tuple[str, ...] = ()

    @classmethod
    def of(cls, languages: Sequence[str], axis_sizes: Sequence[tuple[str, int]] = ()) -> TableLayout:
        """The layout for ``languages`` and ``axis_sizes`` (axis, number of identifiers) in study order:
        the two largest axes (ties: study order), named in study order, when there are three or more."""
        heavy: tuple[str, ...] = ()
        if len(axis_sizes) >= 3:
            order = {axis: i for i, (axis, _) in enumerate(axis_sizes)}
            top = sorted(axis_sizes, key=lambda item: (-item[1], order[item[0]]))[:2]
            heavy = tuple(sorted((axis for axis, _ in top), key=order.__getitem__))
        return cls(tuple(dict.fromkeys(str(lang) for lang in languages)), heavy)


def heavy_axes_column(axes: Sequence[str]) -> str | None:
    """``religion_region_share`` for axes (Religion, Region): the leaderboard's share-of-pairs column."""
    if not axes:
        return None
    return "_".join(re.sub(r"[^0-9a-z]+", "_", axis.lower()).strip("_") for axis in axes) + "_share"


def table_columns(name: str, layout: TableLayout | None = None) -> tuple[str, ...]:
    """``name``'s columns for one study: each run of ``{lang}`` templates (a value column and the
    interval columns after it) repeated per language (``en_mean_delta, en_ci_low, en_ci_high,
    es_mean_delta, ...``), ``{axes}_share`` named after the
    heavy axes, and ``{compared}`` (``language_moderation``) the compared language, present only when
    the study has more than two languages; without a layout the templates are dropped."""
    layout = layout or TableLayout()
    out: list[str] = []
    run: list[str] = []

    def flush() -> None:
        out.extend(col.format(lang=lang) for lang in layout.languages for col in run)
        run.clear()

    for col in TABLE_COLUMNS[name]:
        if "{lang}" in col:
            if run and "_ci_" not in col:  # a value column starts a new run; its interval columns follow it
                flush()
            run.append(col)
            continue
        flush()
        if col == "{axes}_share":
            heavy = heavy_axes_column(layout.heavy_axes)
            if heavy:
                out.append(heavy)
        elif col == "{compared}":
            if len(layout.languages) > 2:
                out.append("language")
        else:
            out.append(col)
    flush()
    return tuple(out)


def empty_table(name: str, layout: TableLayout | None = None) -> pd.DataFrame:
    """An empty frame with ``name``'s columns."""
    return pd.DataFrame({col: pd.Series(dtype="object") for col in table_columns(name, layout)})


def conform(name: str, frame: pd.DataFrame, layout: TableLayout | None = None) -> pd.DataFrame:
    """``frame`` with ``name``'s columns first, in order (missing ones added as NaN), extras after."""
    if frame.empty and not len(frame.columns):
        return empty_table(name, layout)
    columns = table_columns(name, layout)
    out = frame.copy()
    for col in columns:
        if col not in out.columns:
            out[col] = pd.NA if col in ("use_cases",) else float("nan")
    extras = [c for c in out.columns if c not in columns]
    out = out[[*columns, *extras]].reset_index(drop=True)
    for col in out.columns:
        if isinstance(out[col].dtype, pd.CategoricalDtype):
            out[col] = out[col].astype(object)
    return out


#: table -> what run would fill it, when the data cannot support it
UNSUPPORTED_HINTS: dict[str, str] = {
    "qv_robustness": "needs at least two question variants per use case (run without --question-variant)",
    "qv_robustness_model": "needs at least two question variants per use case (run without --question-variant)",
    "qv_robustness_by_use_case": "needs at least two question variants per use case "
    "(run without --question-variant)",
    "fairness_ablation": "needs runs with the fairness instruction: add --variant standard --variant fairness",
    "merit_sensitivity": "needs at least two profiles per use case (run without --profile)",
    "profile_rank_agreement": "needs at least three profiles per use case (run without --profile)",
    "kendalls_w": "needs at least two profiles and two identifiers per use case and axis",
    "kendalls_w_axis": "needs at least two profiles and two identifiers per use case and axis",
    "kendalls_w_model": "needs at least two profiles and two identifiers per use case and axis",
    "cpg": "needs both identifiers of a canonical pair in the same slots (profile × question variant)",
    "cpg_overall": "needs both identifiers of a canonical pair in the same slots (profile × question variant)",
    "power": "needs both identifiers of a canonical pair in the same slots (profile × question variant)",
}
#: words for codes in the findings (the study's languages)
GENERIC_HINT = "needs at least two identifiers of one axis answered in the same slot (profile × question variant)"


def language_hint(languages: Sequence[str]) -> str:
    """Why ``language_moderation`` is empty, in the study's languages."""
    if len(languages) < 2:
        named = f" ({languages[0]})" if languages else ""
        return f"the study has one language{named}: there is no other language to compare"
    flags = " ".join(f"--language {lang}" for lang in languages[:2])
    return (f"needs answers in the study's first language and another of its languages for the same model: "
            f"run with {flags} (or without --language)")
