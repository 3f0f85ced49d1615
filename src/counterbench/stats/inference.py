"""Decisions from slot (cluster) bootstrap replicates: intervals that cover with few slots, p-values,
multiplicity, and the minimum number of slots for a test (issue "every star earned"; spec §3 amendments).

The slot bootstrap resamples *slots* (profile × question variant: the prompts that differ
only in the identifier), because pairs within a slot share a profile and a question and are not
independent. With few slots a plain percentile interval of a cluster bootstrap is too narrow: a
resample of n clusters has only (n − 1)/n of the variance of the mean, and its percentiles use normal
rather than t tails. Decisions:

- **Interval**: ``estimate ± t_{df}(α/2) · se · sqrt(n̄ / (n̄ − 1))``, with se the standard error of
  the slot-bootstrap replicates, n̄ the mean number of slots per independently resampled group (e.g.
  per use case) and df = slots − groups: the bootstrap's (n − 1)/n variance deficit and the t tails
  of a few clusters put back (the same correction as Hesterberg's expanded percentile interval, *What
  Teachers Should Know About the Bootstrap*, 2015, applied to the standard error: with 2 slots per
  group the percentiles of a bootstrap are bounded by the few distinct resamples and cannot be
  expanded). With many slots it is the usual normal interval of the bootstrap.
- **Effective slots.** For a ratio of sums (a canonical pair gap) a slot weighs its answers' level, and
  slots of very different levels (prices from ₹20,000 to ₹1.8 lakh) carry less information than
  their count: n is then Kish's effective number ``(Σw)² / Σw²`` (:func:`effective_slots`). The
  threshold below still counts slots.
- **p-value** of "the statistic is 0": the matching t-test, so an interval excludes 0 exactly when
  p < 0.05. Smooth (no floor at 1 / replicates), so Benjamini–Hochberg can rank small p-values.
- **Too little data**: a comparison resting on fewer than :data:`MIN_SLOTS` slots is not tested
  (no p, no mark; the report says "too few matched prompts to test (n = …)"). The value is chosen
  from the coverage simulation in ``benchmarks/calibration.py`` (docs/analysis.md gives the figures):
  the smallest n at which the expanded slot interval of a canonical pair gap covered ≥ 93%.
- **Multiplicity**: marks are Benjamini–Hochberg q ≤ α within a *family*: by default one model's
  rows of one table, so a model's marks do not depend on which other models were audited with it.
  Under the complete null (no effect anywhere in the family) BH controls the family-wise error rate
  at α.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import stats

from counterbench.stats.multiple_testing import benjamini_hochberg

__all__ = [
    "ALPHA",
    "MIN_SLOTS",
    "effective_slots",
    "family_marks",
    "slot_interval",
    "slot_t_pvalue",
    "too_few_text",
]

FloatArray = npt.NDArray[np.float64]
ALPHA = 0.05
#: fewest slots (matched prompts) a comparison needs before it is tested; see the module docstring
MIN_SLOTS = 3


def effective_slots(weights: npt.ArrayLike) -> float:
    """Kish's effective number of slots ``(Σw)² / Σw²`` of a ratio statistic whose slots weigh ``w``
    (e.g. a canonical pair gap of sums: a slot weighs its answers' level). Equal weights: the count."""
    w = np.abs(np.asarray(weights, dtype=np.float64).ravel())
    w = w[np.isfinite(w)]
    total = float((w * w).sum())
    return float(w.sum() ** 2 / total) if total > 0 else float(w.size)


def _expansion(n_slots: npt.ArrayLike, n_groups: npt.ArrayLike) -> tuple[FloatArray, FloatArray]:
    """(variance factor n̄/(n̄−1), degrees of freedom) per row; NaN where fewer than 2 slots per group."""
    n = np.asarray(n_slots, dtype=np.float64)
    g = np.maximum(np.asarray(n_groups, dtype=np.float64), 1.0)
    mean = n / g
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(mean > 1.0, mean / (mean - 1.0), np.nan)
        df = np.where(n - g >= 1.0, n - g, np.nan)
    return np.asarray(factor, dtype=np.float64), np.asarray(df, dtype=np.float64)


def _overrides(size: int, n_slots: npt.ArrayLike, n_groups: npt.ArrayLike, df: npt.ArrayLike | None,
               factor: npt.ArrayLike | None) -> tuple[FloatArray, FloatArray]:
    f, d = _expansion(np.broadcast_to(n_slots, size), np.broadcast_to(n_groups, size))
    if factor is not None:
        f = np.broadcast_to(np.asarray(factor, dtype=np.float64), (size,)).copy()
    if df is not None:
        d = np.broadcast_to(np.asarray(df, dtype=np.float64), (size,)).copy()
    return f, d


def _slot_se(reps: FloatArray, factor: FloatArray) -> FloatArray:
    """Bootstrap standard error per row (finite replicates only), inflated by sqrt(factor)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        finite = np.isfinite(reps)
        n = finite.sum(axis=1)
        mean = np.where(finite, reps, 0.0).sum(axis=1) / n
        var = np.where(finite, (reps - mean[:, None]) ** 2, 0.0).sum(axis=1) / (n - 1)
        return np.asarray(np.where(n >= 2, np.sqrt(var * factor), np.nan), dtype=np.float64)


def slot_interval(estimate: npt.ArrayLike, reps: npt.ArrayLike, n_slots: npt.ArrayLike,
                  n_groups: npt.ArrayLike = 1, confidence: float = 0.95, *, df: npt.ArrayLike | None = None,
                  factor: npt.ArrayLike | None = None) -> tuple[FloatArray, FloatArray]:
    """The 95% interval of each row: ``estimate ± t_df · se · sqrt(n̄/(n̄−1))`` with ``se`` the slot
    bootstrap standard error of ``reps`` (rows × replicates). NaN where a row has < 2 slots per group
    or fewer than 2 finite replicates. Excludes 0 exactly when :func:`slot_t_pvalue` < 1 − confidence.
    ``df`` / ``factor`` replace the degrees of freedom / variance factor."""
    est = np.atleast_1d(np.asarray(estimate, dtype=np.float64))
    arr = np.atleast_2d(np.asarray(reps, dtype=np.float64))
    factor, df = _overrides(est.size, n_slots, n_groups, df, factor)
    if arr.shape[1] < 2:
        nan = np.full(est.size, np.nan)
        return nan, nan.copy()
    half = stats.t.isf((1.0 - float(confidence)) / 2.0, np.where(np.isnan(df), 1.0, df)) * _slot_se(arr, factor)
    half = np.where(np.isnan(df), np.nan, half)
    return np.asarray(est - half, dtype=np.float64), np.asarray(est + half, dtype=np.float64)


def slot_t_pvalue(estimate: npt.ArrayLike, reps: npt.ArrayLike, n_slots: npt.ArrayLike,
                  n_groups: npt.ArrayLike = 1, *, df: npt.ArrayLike | None = None,
                  factor: npt.ArrayLike | None = None) -> FloatArray:
    """Two-sided p of "the statistic is 0" from slot-bootstrap replicates (rows × replicates): a t-test
    with the bootstrap SE inflated by sqrt(n̄/(n̄−1)) and df = slots − groups (see module)."""
    est = np.atleast_1d(np.asarray(estimate, dtype=np.float64))
    arr = np.atleast_2d(np.asarray(reps, dtype=np.float64))
    factor, df = _overrides(est.size, n_slots, n_groups, df, factor)
    if arr.shape[1] < 2:
        return np.full(est.size, np.nan)
    se = _slot_se(arr, factor)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = 2.0 * stats.t.sf(np.abs(est) / se, np.where(np.isnan(df), 1.0, df))
    p = np.where(est == 0.0, 1.0, p)
    p = np.where(np.isnan(df) | np.isnan(se) | ~np.isfinite(est), np.nan, p)
    return np.asarray(np.clip(p, 0.0, 1.0), dtype=np.float64)


def family_marks(frame: pd.DataFrame, *, p_col: str = "p_value", family: Sequence[str] = ("model",),
                 testable: npt.ArrayLike | None = None, alpha: float = ALPHA
                 ) -> tuple[FloatArray, npt.NDArray[np.bool_]]:
    """BH q-values within each family (rows sharing the ``family`` columns) and marks (q ≤ ``alpha``).

    Rows that are not ``testable`` (too few slots) or have a NaN p are left out of the family: their
    q is NaN and they are never marked.
    """
    p = pd.to_numeric(frame[p_col], errors="coerce").to_numpy(np.float64).copy()
    if testable is not None:
        p[~np.asarray(testable, dtype=bool)] = np.nan
    q = np.full(len(frame), np.nan)
    cols = [c for c in family if c in frame.columns]
    if len(frame):
        groups = (frame.groupby(cols, sort=False, observed=True, dropna=False).ngroup().to_numpy()
                  if cols else np.zeros(len(frame), dtype=np.int64))
        for g in np.unique(groups):
            rows = np.flatnonzero(groups == g)
            q[rows] = benjamini_hochberg(p[rows])[0]
    marks = np.asarray(np.nan_to_num(q, nan=1.0) <= alpha, dtype=bool)
    return q, marks


def too_few_text(n_slots: int | float) -> str:
    """The report's words for a comparison that is not tested."""
    n = int(n_slots) if n_slots == n_slots else 0
    return f"too few matched prompts to test (n = {n})"
