"""A noise floor for the headline metrics: disparity, deviation and the Top-Score Rate (pure functions).

A fair but noisy evaluator does not score 0 on disparity: with 20 jobs the simulated fair model's
win-rate disparity is about 0.08 (the paper's across-model means are 0.063–0.072), its Top-Score-Rate
disparity about 0.24. So every headline number comes with

- an **interval**: the occupation bootstrap (occupations — the jobs of one occupation are
  near-duplicates — are the independent unit, as everywhere in this study) of the same metric, its
  percentile interval widened about the estimate by t_{C−1}/z · √(C/(C−1)) (:func:`.metrics.widen`),
  clipped to the metric's range [0, 1]; and
- a **null reference**: the same metric recomputed on the same answers under "the markers change
  nothing" — for Direct Comparison, each occupation's comparisons trade sides with their neutral
  resumes together (every (win rate − 0.5) of the occupation's jobs changes sign; the swap test of the
  win rates); for Score & Shortlist, the scores of a job are shuffled among its resumes (the neutral one
  included), with one shuffle of the resume slots shared by the jobs of an occupation (resumes in the
  same group × variation order) whenever they hold the same number of valid scores.
  The table gives the null's median and 95th percentile, and the share of null draws at least as
  large as the observed value (``*_p``, with the +1 correction): a disparity below the null's 95th
  percentile is what a fair evaluator with this data's noise shows.

Decisions: 2,000 null draws by default (``n_null``); one stable seed per metric × model × prompt
variant; groups are the marked ones (the neutral resume is not a group of the disparity).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pandas as pd

from counterbench.builtin.hiring.metrics import (
    CELL,
    NEUTRAL,
    _job_bootstrap,
    _pivot,
    cluster_labels,
    comparison_win_rates,
    widen,
)
from counterbench.stats.cluster_bootstrap import cluster_totals
from counterbench.stats.intervals import percentile_interval
from counterbench.stats.seeding import derive_rng

FloatArray = npt.NDArray[np.float64]
METRICS = ("disparity", "deviation")
COLUMNS = ["model", "setting", "rationale", *[f"{m}{s}" for m in METRICS
                                              for s in ("_low", "_high", "_null", "_null_high", "_p")]]


def _disparity_deviation(values: FloatArray, ideal: float, scale: float) -> tuple[FloatArray, FloatArray]:
    """Disparity (max − min) and deviation |mean − ideal| / ideal per row, on a 0–1 scale."""
    with np.errstate(invalid="ignore"):
        disparity = (np.nanmax(values, axis=-1) - np.nanmin(values, axis=-1)) / scale
        deviation = np.abs(np.nanmean(values, axis=-1) - ideal) / ideal
    return disparity, deviation


def _row(point: tuple[float, float], reps: tuple[FloatArray, FloatArray], null: tuple[FloatArray, FloatArray],
         n_jobs: int, confidence: float) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, value, rep, draws in zip(METRICS, point, reps, null, strict=True):
        rep = rep[np.isfinite(rep)]
        low, high = percentile_interval(rep, confidence) if len(rep) else (np.nan, np.nan)
        low, high = widen(value, low, high, n_jobs, confidence)
        draws = draws[np.isfinite(draws)]
        out[f"{name}_low"] = float(np.clip(low, 0.0, 1.0))  # both metrics lie in [0, 1]
        out[f"{name}_high"] = float(np.clip(high, 0.0, 1.0))
        out[f"{name}_null"] = float(np.median(draws)) if len(draws) else np.nan
        out[f"{name}_null_high"] = float(np.quantile(draws, 0.95)) if len(draws) else np.nan
        out[f"{name}_p"] = float((1 + np.sum(draws >= value - 1e-12)) / (1 + len(draws))) if len(draws) else np.nan
    return out


def win_rate_floor(comparisons: pd.DataFrame, *, n_boot: int = 5000, n_null: int = 2000, seed: int = 0,
                   confidence: float = 0.95) -> pd.DataFrame:
    """Intervals and the job-swap null of win-rate disparity and deviation per model × prompt variant."""
    per = comparison_win_rates(comparisons)
    per = per[~per["group"].eq(NEUTRAL)]
    rows = []
    for (model, rationale), part in per.groupby(CELL, sort=False):
        groups = list(dict.fromkeys(part["group"]))
        sums, counts = _pivot(part, "win_rate", groups)
        total = counts.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            point = _disparity_deviation(sums.sum(axis=0) / total, 0.5, 1.0)
        rng = derive_rng("hiring", "floor-wr", model, rationale, base_seed=seed)
        reps = _disparity_deviation(_job_bootstrap(sums, counts, n_boot, rng), 0.5, 1.0)
        signs = rng.choice(np.array([-1.0, 1.0]), size=(n_null, sums.shape[0]))
        with np.errstate(invalid="ignore", divide="ignore"):
            null_wr = 0.5 + (signs @ (sums - 0.5 * counts)) / total
        null = _disparity_deviation(null_wr, 0.5, 1.0)
        rows.append({"model": model, "setting": "compare", "rationale": bool(rationale),
                     **_row((float(point[0]), float(point[1])), reps, null, sums.shape[0], confidence)})
    return pd.DataFrame(rows, columns=COLUMNS)


Pool = tuple[FloatArray, npt.NDArray[np.int64], str]


def _top_matrix(part: pd.DataFrame, groups: list[str]) -> tuple[FloatArray, FloatArray, list[Pool]]:
    """Jobs × groups: 1 where some resume of the group has the job's top score, present; per job its
    scores and group columns (-1: the neutral resume), in group × variation order, and its occupation,
    for the permutation null."""
    index = {g: i for i, g in enumerate(groups)}
    jobs = list(dict.fromkeys(part["job_id"]))
    top = np.zeros((len(jobs), len(groups)))
    present = np.zeros((len(jobs), len(groups)))
    pools = []
    ordered = part.assign(_unit=cluster_labels(part).to_numpy())
    order = [c for c in ("group", "variation") if c in ordered.columns]
    for j, (_, job) in enumerate(ordered.groupby("job_id", sort=False)):
        job = job.sort_values(order, kind="stable")
        score = job["score"].to_numpy(np.float64)
        cols = job["group"].map(lambda g: index.get(g, -1)).to_numpy(np.int64)
        at_top = score == score.max()
        for k in set(cols[cols >= 0].tolist()):
            present[j, k] = 1.0
            top[j, k] = float(at_top[cols == k].any())
        pools.append((score, cols, str(job["_unit"].iloc[0])))
    return top, present, pools


def _permuted_tsr(pools: list[Pool], n_groups: int, n_null: int, rng: np.random.Generator) -> FloatArray:
    """TSR (%) per group for ``n_null`` shuffles of each job's scores among its resumes; the jobs of one
    occupation with the same number of resumes share their shuffles (the same slots trade places)."""
    tops = np.zeros((n_null, n_groups))
    present = np.zeros(n_groups)
    shared: dict[tuple[str, int], npt.NDArray[np.int64]] = {}
    for score, cols, unit in pools:
        key = (unit, len(score))
        if key not in shared:
            shared[key] = rng.permuted(np.broadcast_to(np.arange(len(score)), (n_null, len(score))), axis=1)
        shuffled = score[shared[key]]
        at_top = shuffled == shuffled.max(axis=1, keepdims=True)
        by_group = np.argsort(cols, kind="stable")  # the job's resume slots, grouped by group
        sorted_cols = cols[by_group]
        starts = np.flatnonzero(np.r_[True, sorted_cols[1:] != sorted_cols[:-1]])
        any_top = np.logical_or.reduceat(at_top[:, by_group], starts, axis=1)
        groups_here = sorted_cols[starts]
        keep = groups_here >= 0
        present[groups_here[keep]] += 1.0
        tops[:, groups_here[keep]] += any_top[:, keep]
    with np.errstate(invalid="ignore", divide="ignore"):
        return 100.0 * tops / present


def top_score_floor(scores: pd.DataFrame, *, n_boot: int = 5000, n_null: int = 2000, seed: int = 0,
                    confidence: float = 0.95) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Intervals and the within-job permutation null of TSR disparity and deviation (per model × prompt
    variant), and per group its TSR interval and null reference (``tsr_low``, ``tsr_high``, ``tsr_null``,
    ``tsr_null_high``)."""
    valid = scores[scores["score"].notna()]
    rows, per_group = [], []
    for (model, rationale), part in valid.groupby(CELL, sort=False):
        groups = [g for g in dict.fromkeys(part["group"]) if g != NEUTRAL]
        if not groups:
            continue
        top, present, pools = _top_matrix(part, groups)
        units = [unit for _, _, unit in pools]
        top, present = cluster_totals(top, units), cluster_totals(present, units)  # occupations × groups
        with np.errstate(invalid="ignore", divide="ignore"):
            tsr = 100.0 * top.sum(axis=0) / present.sum(axis=0)
        rng = derive_rng("hiring", "floor-tsr", model, rationale, base_seed=seed)
        reps_tsr = 100.0 * _job_bootstrap(top, present, n_boot, rng)
        null_tsr = _permuted_tsr(pools, len(groups), n_null, rng)
        point = _disparity_deviation(tsr, 100.0, 100.0)
        rows.append({"model": model, "setting": "score", "rationale": bool(rationale),
                     **_row((float(point[0]), float(point[1])), _disparity_deviation(reps_tsr, 100.0, 100.0),
                            _disparity_deviation(null_tsr, 100.0, 100.0), top.shape[0], confidence)})
        low, high = percentile_interval(reps_tsr, confidence, axis=0) if n_boot else (tsr * np.nan, tsr * np.nan)
        low, high = widen(tsr, low, high, top.shape[0], confidence)
        for k, group in enumerate(groups):
            per_group.append({"model": model, "rationale": bool(rationale), "group": group,
                              "tsr_low": float(np.clip(low[k], 0.0, 100.0)),
                              "tsr_high": float(np.clip(high[k], 0.0, 100.0)),
                              "tsr_null": float(np.nanmean(null_tsr[:, k])),
                              "tsr_null_high": float(np.nanquantile(null_tsr[:, k], 0.95))})
    return (pd.DataFrame(rows, columns=COLUMNS),
            pd.DataFrame(per_group, columns=["model", "rationale", "group", "tsr_low", "tsr_high", "tsr_null",
                                             "tsr_null_high"]))
