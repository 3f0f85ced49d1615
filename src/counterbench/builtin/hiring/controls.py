"""Controls: the position effect, job fit, resume length and language-only variants (pure functions).

Paper "Small Changes, Big Impact" §3.4.1, §4.2 ("Robustness checks"), App. E (job fit), G
(language-only), H (resume length). Decisions:

- **Position effect** per model × prompt variant: ``first_share`` = mean over answered comparison
  prompts of 1 (A chosen), 0.5 (Tie), 0 (B) — 0.5 for a model without position bias; ``tie_share``;
  ``consistency`` = share of comparisons (both positions answered) whose two verdicts prefer the same
  resume or tie twice. CI of ``first_share`` by the occupation bootstrap (as every CI of this study).
- **Job fit**: WR per ethnicity = mean of the WR_g of its gender groups, within each job
  gender-dominance category (male / female / neutral), and the range across ethnicities.
- **Resume length**: the outcome regressed on the augmented resume's character length after removing
  the mean of each job × ethnicity cell (OLS slope within job × ethnicity, its two-sided p-value and
  r); for Direct Comparison the outcome is the comparison's win rate, for Score & Shortlist the
  score. Within the job alone the control confounds length with ethnicity: one ethnicity's baskets
  can be longer (the built-in Chinese ones are: their resumes average 1,844 vs 1,828 characters), so
  a preference for that ethnicity reads as a length effect (+0.13 win rate per 100 characters,
  p = 0.004, with an ethnicity-only planted effect on 40 jobs). Within job × ethnicity only the
  length differences between the variations of one ethnicity remain, which is what the control asks:
  does length matter once the markers' group is held fixed?
- **Language-only**: WR per **ethnicity** for comparisons whose augmented resume carries only the
  languages line (condition ``only-languages``). The languages line of a basket usually does not
  depend on gender, so the Male and Female resumes are byte-identical prompts (the second is served
  from the cache): byte-identical prompts (``user`` text, when the frame has it) count once, and the
  table — and its Benjamini–Hochberg family — has one row per ethnicity, not two identical ones.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from counterbench.builtin.hiring.metrics import CELL, NEUTRAL, cluster_labels, comparison_win_rates, widen, win_rates
from counterbench.stats.cluster_bootstrap import cluster_weights
from counterbench.stats.intervals import percentile_interval
from counterbench.stats.seeding import derive_rng


def position_effect(comparisons: pd.DataFrame, *, n_boot: int = 5000, seed: int = 0,
                    confidence: float = 0.95) -> pd.DataFrame:
    """Share of first-position choices, ties and consistent pairs per model × prompt variant."""
    rows = []
    answered = comparisons[comparisons["verdict"].isin(["A", "B", "Tie"])]
    for (model, rationale), part in answered.groupby(CELL, sort=False):
        first = np.where(part["verdict"].eq("A"), 1.0, np.where(part["verdict"].eq("Tie"), 0.5, 0.0))
        frame = part.assign(first=first)
        # occupations are the independent unit (their jobs are near-duplicates; metrics.cluster_labels)
        by_job = frame.groupby(cluster_labels(frame).to_numpy(), sort=False)["first"].agg(["sum", "count"])
        w = cluster_weights(derive_rng("hiring", "position", model, rationale, base_seed=seed), len(by_job), n_boot)
        reps = (w @ by_job["sum"].to_numpy(np.float64)) / (w @ by_job["count"].to_numpy(np.float64))
        low, high = percentile_interval(reps, confidence) if n_boot else (np.nan, np.nan)
        low, high = widen(float(first.mean()), low, high, len(by_job), confidence)
        low, high = float(np.clip(low, 0.0, 1.0)), float(np.clip(high, 0.0, 1.0))
        keys = [c for c in ("condition", "job_id", "group", "variation") if c in part.columns]
        pairs = frame.pivot_table(index=keys, columns="position", values="verdict", aggfunc="first")
        both = pairs.dropna() if {"A", "B"} <= set(pairs.columns) else pairs.iloc[0:0]
        if len(both):
            same = ((both["A"].eq("A") & both["B"].eq("B")) | (both["A"].eq("B") & both["B"].eq("A"))
                    | (both["A"].eq("Tie") & both["B"].eq("Tie")))
            consistency = float(same.mean())
        else:
            consistency = float("nan")
        rows.append({"model": model, "rationale": bool(rationale), "n": len(part), "first_share": float(first.mean()),
                     "ci_low": float(low), "ci_high": float(high), "tie_share": float(part["verdict"].eq("Tie").mean()),
                     "consistency": consistency, "n_pairs": len(both)})
    return pd.DataFrame(rows)


def job_fit(comparisons: pd.DataFrame, condition: str = "all") -> pd.DataFrame:
    """WR per ethnicity within male-, female-dominated and neutral jobs (mean over its gender groups)."""
    per = comparison_win_rates(comparisons)
    per = per[per["condition"].eq(condition)]
    keys = [*CELL, "gender_dominance", "ethnicity", "gender"]
    groups = per.groupby(keys, sort=False)["win_rate"].mean().reset_index()
    eth = groups.groupby([*CELL, "gender_dominance", "ethnicity"], sort=False)["win_rate"].mean().reset_index()
    spread = eth.groupby([*CELL, "gender_dominance"], sort=False)["win_rate"].agg(lambda s: s.max() - s.min())
    eth["range"] = eth.set_index([*CELL, "gender_dominance"]).index.map(spread.to_dict())
    return eth


#: the cells within which the length control compares resumes (the markers' group held fixed)
LENGTH_CELLS: tuple[str, ...] = ("job_id", "ethnicity")


def within_cells(frame: pd.DataFrame, y: str, cells: tuple[str, ...] = LENGTH_CELLS) -> dict[str, float]:
    """OLS slope (per 100 characters), p-value and r of ``y`` on ``resume_chars`` within ``cells``."""
    x = frame["resume_chars"].astype(np.float64)
    yy = frame[y].astype(np.float64)
    keys = [frame[c] for c in cells if c in frame.columns]
    xc = x - x.groupby(keys).transform("mean")
    yc = yy - yy.groupby(keys).transform("mean")
    if len(frame) < 3 or float(np.var(xc)) == 0.0:
        return {"slope_per_100_chars": np.nan, "p_value": np.nan, "r": np.nan, "n": len(frame)}
    fit = stats.linregress(xc, yc)
    return {"slope_per_100_chars": float(fit.slope * 100.0), "p_value": float(fit.pvalue), "r": float(fit.rvalue),
            "n": len(frame)}


def length_control(comparisons: pd.DataFrame | None, scores: pd.DataFrame | None) -> pd.DataFrame:
    """Regression of the outcome on resume length within job × ethnicity, per setting × model × prompt variant."""
    rows = []
    if comparisons is not None and not comparisons.empty:
        per = comparison_win_rates(comparisons)
        per = per[per["condition"].eq("all")]
        for (model, rationale), part in per.groupby(CELL, sort=False):
            rows.append({"setting": "compare", "model": model, "rationale": bool(rationale),
                         **within_cells(part.dropna(subset=["win_rate"]), "win_rate")})
    if scores is not None and not scores.empty:
        marked = scores[~scores["group"].eq(NEUTRAL) & scores["score"].notna()]
        for (model, rationale), part in marked.groupby(CELL, sort=False):
            rows.append({"setting": "score", "model": model, "rationale": bool(rationale),
                         **within_cells(part, "score")})
    return pd.DataFrame(rows)


def language_only(comparisons: pd.DataFrame, *, n_boot: int = 5000, seed: int = 0) -> pd.DataFrame:
    """WR per ethnicity when only the languages line differs from the neutral resume (one row per
    ethnicity; byte-identical prompts count once)."""
    if "condition" not in comparisons.columns or not comparisons["condition"].eq("only-languages").any():
        return pd.DataFrame(columns=["model", "rationale", "group", "win_rate", "ci_low", "ci_high"])
    lang = comparisons[comparisons["condition"].eq("only-languages")]
    if "user" in lang.columns:
        lang = lang.drop_duplicates(subset=[*CELL, "user"])
    lang = lang.assign(group=lang["ethnicity"])
    return win_rates(lang, n_boot=n_boot, seed=seed, condition="only-languages")
