"""Across-model summaries (paper "Small Changes, Big Impact" Figs. 3, 5, 13 and Table 14; App. E).

Inputs are the study's own tables: ``hiring_bias_summary`` (disparity and deviation per model ×
setting × prompt variant), ``hiring_win_rates`` / ``hiring_scores`` (per-group values) and the
Direct Comparison answers (for the job categories).

Decisions:

- **Ranking** (Fig. 13): a model's mean disparity and mean deviation are the plain means over the
  setting × prompt-variant conditions it has (the paper: both settings, both variants); rank 1 is the
  lowest mean disparity (ties share the lower rank, ``method="min"``).
- **Across-model means** (Fig. 3): the mean, minimum and maximum over models of disparity and
  deviation per setting × prompt variant.
- **Rank first** ("n of m models rank group g first"): the group with the highest value of a model —
  the win rate in Direct Comparison, the mean score in Score & Shortlist (not the Top-Score Rate) —
  per setting × prompt variant, and for Direct Comparison also within each job category
  (``gender_dominance``; ``all`` = every job). Tied top groups each count, so the counts of one
  condition can sum to more than m.
- **Job fit over models** (Table 14): each model's win rate per ethnicity (the mean of its gender
  groups) within a job category, then the mean over models; ``range`` = max − min over ethnicities.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from counterbench.builtin.hiring.metrics import NEUTRAL, comparison_win_rates

ALL_JOBS = "all"


def model_ranking(summary: pd.DataFrame) -> pd.DataFrame:
    """One row per model: mean disparity and deviation over its conditions and the rank by disparity."""
    cols = ["rank", "model", "mean_disparity", "mean_deviation", "n_conditions"]
    if summary.empty:
        return pd.DataFrame(columns=cols)
    per = summary.groupby("model", sort=False).agg(mean_disparity=("disparity", "mean"),
                                                   mean_deviation=("deviation", "mean"),
                                                   n_conditions=("disparity", "size")).reset_index()
    per["rank"] = per["mean_disparity"].rank(method="min").astype("int64")
    return per.sort_values(["rank", "model"])[cols].reset_index(drop=True)


def across_model_means(summary: pd.DataFrame) -> pd.DataFrame:
    """Mean, minimum and maximum over models of disparity and deviation per setting × prompt variant."""
    if summary.empty:
        return pd.DataFrame()
    return summary.groupby(["setting", "rationale"], sort=False).agg(
        n_models=("model", "nunique"), mean_disparity=("disparity", "mean"), min_disparity=("disparity", "min"),
        max_disparity=("disparity", "max"), mean_deviation=("deviation", "mean"), min_deviation=("deviation", "min"),
        max_deviation=("deviation", "max")).reset_index()


def _firsts(values: pd.DataFrame, value: str, keys: list[str]) -> list[dict[str, object]]:
    rows = []
    for key, part in values.groupby(keys, sort=False):
        part = part[part[value].notna()]
        models = part["model"].nunique()
        top = part[part[value].eq(part.groupby("model")[value].transform("max"))]
        counts = top.groupby("group")["model"].nunique()
        for group in dict.fromkeys(part["group"]):
            rows.append({**dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True)), "group": group,
                         "n_first": int(counts.get(group, 0)), "n_models": int(models)})
    return rows


def rank_first(win_rates: pd.DataFrame, scores: pd.DataFrame, comparisons: pd.DataFrame) -> pd.DataFrame:
    """How many models put each group first, per setting × prompt variant × job category."""
    cols = ["setting", "rationale", "gender_dominance", "group", "n_first", "n_models"]
    rows: list[dict[str, object]] = []
    if not win_rates.empty:
        wr = win_rates[~win_rates["group"].eq(NEUTRAL)].assign(setting="compare", gender_dominance=ALL_JOBS)
        rows += _firsts(wr, "win_rate", ["setting", "rationale", "gender_dominance"])
    if not comparisons.empty and "gender_dominance" in comparisons.columns:
        per = comparison_win_rates(comparisons)
        per = per[per["condition"].eq("all")] if "condition" in per.columns else per
        groups = per.groupby(["model", "rationale", "gender_dominance", "group"], sort=False)["win_rate"].mean()
        rows += _firsts(groups.reset_index().assign(setting="compare"), "win_rate",
                        ["setting", "rationale", "gender_dominance"])
    if not scores.empty:
        sc = scores[~scores["group"].eq(NEUTRAL)].assign(setting="score", gender_dominance=ALL_JOBS)
        rows += _firsts(sc, "mean_score", ["setting", "rationale", "gender_dominance"])
    return pd.DataFrame(rows, columns=cols)


def job_fit_over_models(job_fit: pd.DataFrame) -> pd.DataFrame:
    """Mean over models of each ethnicity's win rate within each job category, and the range (Table 14)."""
    if job_fit.empty:
        return pd.DataFrame()
    keys = ["rationale", "gender_dominance"]
    out = job_fit.groupby([*keys, "ethnicity"], sort=False).agg(win_rate=("win_rate", "mean"),
                                                                 n_models=("model", "nunique")).reset_index()
    spread = out.groupby(keys, sort=False)["win_rate"].agg(lambda s: float(np.max(s) - np.min(s)))
    out["range"] = out.set_index(keys).index.map(spread.to_dict())
    return out
