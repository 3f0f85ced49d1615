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
- **Unequal slots** (:func:`slot_design`). For a ratio of sums (a canonical pair gap) a slot weighs its
  answers' level, and slots of very different levels (counter-offers from ₹6 lakh to ₹2.2 crore)
  carry less information than their count; a mean over use cases of unequal size weighs a slot of a
  small use case more. The bootstrap variance is then the cluster-robust (sandwich) variance of a
  weighted mean, whose bias and whose degrees of freedom depend on the weights: the variance factor
  is ``Σa² / E[V̂]`` and df is Bell and McCaffrey's ``tr(M)² / tr(M²)`` under equal slot variances
  (Bell & McCaffrey, *Bias reduction in standard errors for linear regression with multi-stage
  samples*, 2002; Imbens & Kolesár, *Robust standard errors in small samples: some practical
  advice*, 2016). With equal weights they are n/(n − 1) and n − 1, the rule above; with the
  counter-offer levels of full English df is 13 where Kish's effective number (30) gave 29, and the
  t-test with 29 df rejected ~1.4× as often as it should at the far-tail levels Benjamini–Hochberg
  uses (α/30); Satterthwaite's df errs the other way (~0.5×) — ``tests/stats/test_stats_inference.py``,
  ``benchmarks/calibration.py``, docs/analysis.md. The threshold below still counts slots.
- **p-value** of "the statistic is 0": the matching t-test (:func:`slot_t_pvalue`), so an interval
  excludes 0 exactly when p < 0.05. Smooth (no floor at 1 / replicates). A mark uses the larger of
  it and the exact swap test's p (:func:`both_tests_pvalue`, :mod:`counterbench.stats.swap_test`).
- **Too little data**: a comparison resting on fewer than :data:`MIN_SLOTS` slots is not tested
  (no mark; the report says "too few matched prompts to test (n = …)"). Marks come from the exact swap
  test (:mod:`counterbench.stats.swap_test`), whose smallest p with n slots is 2 / 2ⁿ: five slots
  cannot go below 0.0625, six reach 0.031 — so 6. (The interval alone needs 3: the smallest n at
  which the expanded slot interval of a canonical pair gap covered ≥ 93% under every answer law
  simulated in ``benchmarks/calibration.py``; docs/analysis.md gives the figures.) Below that —
  fewer than :data:`MIN_SLOTS_INTERVAL` slots per independently resampled group — no interval is
  drawn at all (:func:`too_few_for_interval`): with 2 slots per use case the overall Mean Δ% of the
  old quick preset got "19.7, 95% CI −9.6 to 48.9".
- **Bounded quantities**: a quantity that cannot be negative (a mean of absolute gaps) gets its
  interval cut at 0 (``slot_interval(lower=0)``); shares already come from a Wilson interval in [0, 100].
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

from counterbench.stats.arrays import FloatArray
from counterbench.stats.distributions import t_isf, t_sf
from counterbench.stats.multiple_testing import benjamini_hochberg
from counterbench.stats.swap_test import fewest_testable

__all__ = [
    "ALPHA",
    "MIN_SLOTS",
    "MIN_SLOTS_INTERVAL",
    "both_tests_pvalue",
    "earned_marks",
    "effective_slots",
    "family_marks",
    "slot_design",
    "slot_interval",
    "slot_proportion_interval",
    "slot_t_pvalue",
    "too_few_for_interval",
    "too_few_text",
]

ALPHA = 0.05
#: fewest slots (matched prompts) a comparison needs before it is tested: the fewest whose swap test
#: can reach p ≤ ALPHA at all (6); see the module docstring
MIN_SLOTS = fewest_testable(ALPHA)
#: fewest slots whose slot interval covered ≥ 93% in simulation (an interval is shown from here)
MIN_SLOTS_INTERVAL = 3


def effective_slots(weights: npt.ArrayLike) -> float:
    """Kish's effective number of slots ``(Σw)² / Σw²`` of a ratio statistic whose slots weigh ``w``
    (e.g. a canonical pair gap of sums: a slot weighs its answers' level). Equal weights: the count."""
    w = np.abs(np.asarray(weights, dtype=np.float64).ravel())
    w = w[np.isfinite(w)]
    total = float((w * w).sum())
    return float(w.sum() ** 2 / total) if total > 0 else float(w.size)


def slot_design(weights: npt.ArrayLike, groups: npt.ArrayLike | None = None,
                group_weights: npt.ArrayLike | None = None) -> tuple[float, float]:
    """(variance factor, degrees of freedom) of a slot-bootstrap interval for a weighted slot mean.

    The statistic is ``Σ_g A_g · Σ_{i∈g} w_i y_i / Σ_{i∈g} w_i``: slots ``i`` with weights ``w``
    (e.g. a slot's answer level for a gap of sums, 1 for a mean of per-slot values), in groups ``g``
    resampled independently (e.g. use cases; default: one group) that weigh ``A_g`` (default: equal;
    normalised to sum 1). Its slot-bootstrap variance is (to first order) ``V̂ = Σ a_i² e_i²`` with
    ``a_i = A_g w_i / W_g`` and ``e`` the residuals from each group's weighted mean — ``y'My`` for a
    matrix ``M``. With equal slot variances σ²: ``Var = σ² Σa²``, ``E[V̂] = σ² tr(M)`` and, by
    Satterthwaite, ``V̂`` has ``tr(M)² / tr(M²)`` degrees of freedom (Bell & McCaffrey 2002). Returns
    ``(Σa² / tr(M), tr(M)² / tr(M²))``; equal weights in one group of n: ``(n/(n − 1), n − 1)``;
    G equal groups of n: ``(n/(n − 1), G(n − 1))``. NaN when Kish's effective number of slots
    ``1 / Σa²`` (:func:`effective_slots` for one group) is below 2 — two slots of unequal weight carry
    less than two slots' information and get no interval — or no group has two slots.
    Closed form per group (``b = w/W``, ``x = a²``, ``S = Σb²``, ``X_k = Σ x b^k``):
    ``tr(M) = X_0 − 2X_1 + S X_0``, ``tr(M²) = Σx²(1 + 2S − 4b) + S²X_0² + 2X_0X_2 − 4S X_0X_1 + 2X_1²``.
    """
    w = np.abs(np.asarray(weights, dtype=np.float64).ravel())
    codes = (np.zeros(w.size, dtype=np.int64) if groups is None
             else pd.factorize(np.asarray(groups).ravel(), sort=True)[0].astype(np.int64))
    keep = np.isfinite(w) & (w > 0)
    w, codes = w[keep], codes[keep]
    if w.size == 0:
        return float("nan"), float("nan")
    n_groups = int(codes.max()) + 1
    total_w = np.bincount(codes, weights=w, minlength=n_groups)
    if group_weights is None:
        share = (total_w > 0).astype(np.float64)
    else:
        share = np.broadcast_to(np.asarray(group_weights, dtype=np.float64).ravel(), (n_groups,)).copy()
    share = share / share.sum()
    b = w / total_w[codes]
    x = (share[codes] * b) ** 2
    s = np.bincount(codes, weights=b * b, minlength=n_groups)
    x0, x1, x2 = (np.bincount(codes, weights=x * b**k, minlength=n_groups) for k in range(3))
    tr_m = float((x0 - 2.0 * x1 + s * x0).sum())
    tr_m2 = float((np.bincount(codes, weights=x * x * (1.0 + 2.0 * s[codes] - 4.0 * b), minlength=n_groups)
                   + s * s * x0 * x0 + 2.0 * x0 * x2 - 4.0 * s * x0 * x1 + 2.0 * x1 * x1).sum())
    if not (tr_m > 1e-15 * x.sum() and tr_m2 > 0) or 1.0 / x.sum() < 2.0 - 1e-9:
        return float("nan"), float("nan")
    return float(x.sum() / tr_m), float(tr_m * tr_m / tr_m2)


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


def too_few_for_interval(n_slots: npt.ArrayLike, n_groups: npt.ArrayLike = 1) -> npt.NDArray[np.bool_]:
    """Rows whose slots per independently resampled group (``n_slots / n_groups``) are fewer than
    :data:`MIN_SLOTS_INTERVAL`: the calibration does not support an interval there, so none is drawn."""
    n = np.atleast_1d(np.asarray(n_slots, dtype=np.float64))
    g = np.maximum(np.atleast_1d(np.asarray(n_groups, dtype=np.float64)), 1.0)
    with np.errstate(invalid="ignore"):
        return np.asarray(~(n / g >= MIN_SLOTS_INTERVAL), dtype=np.bool_)


def slot_interval(estimate: npt.ArrayLike, reps: npt.ArrayLike, n_slots: npt.ArrayLike,
                  n_groups: npt.ArrayLike = 1, confidence: float = 0.95, *, df: npt.ArrayLike | None = None,
                  factor: npt.ArrayLike | None = None, lower: float | None = None
                  ) -> tuple[FloatArray, FloatArray]:
    """The 95% interval of each row: ``estimate ± t_df · se · sqrt(n̄/(n̄−1))`` with ``se`` the slot
    bootstrap standard error of ``reps`` (rows × replicates). NaN where a row has fewer than
    :data:`MIN_SLOTS_INTERVAL` slots per group (:func:`too_few_for_interval`) or fewer than 2 finite
    replicates. Excludes 0 exactly when :func:`slot_t_pvalue` < 1 − confidence. ``df`` / ``factor``
    replace the degrees of freedom / variance factor. ``lower``: the smallest value the quantity can
    take (0 for a mean of absolute gaps); the interval is cut there — the part below it holds no
    possible value, so the cut interval covers whenever the uncut one does."""
    est = np.atleast_1d(np.asarray(estimate, dtype=np.float64))
    arr = np.atleast_2d(np.asarray(reps, dtype=np.float64))
    factor, df = _overrides(est.size, n_slots, n_groups, df, factor)
    if arr.shape[1] < 2:
        nan = np.full(est.size, np.nan)
        return nan, nan.copy()
    half = t_isf((1.0 - float(confidence)) / 2.0, np.where(np.isnan(df), 1.0, df)) * _slot_se(arr, factor)
    half = np.where(np.isnan(df) | np.broadcast_to(too_few_for_interval(n_slots, n_groups), est.shape), np.nan, half)
    low, high = est - half, est + half
    if lower is not None:
        low, high = np.maximum(low, lower), np.maximum(high, lower)  # NaN stays NaN
    return np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)


def slot_proportion_interval(estimate_pct: npt.ArrayLike, reps_pct: npt.ArrayLike, n_units: npt.ArrayLike,
                             n_slots: npt.ArrayLike, n_groups: npt.ArrayLike = 1, confidence: float = 0.95
                             ) -> tuple[FloatArray, FloatArray]:
    """The 95% interval of a share in % (Violation@τ) from slot-bootstrap replicates (rows × replicates).

    A Wilson score interval on the *effective* number of units ``p(1 − p) / se²`` (capped at the
    number of units ``n_units``; the count itself when p is 0 or 1 or se is 0), se the slot
    standard error of :func:`slot_interval`, and the t quantile with its degrees of freedom instead
    of z — Korn and Graubard's interval for a proportion from a clustered sample (*Confidence
    intervals for proportions with small expected number of positive counts estimated from survey
    data*, 1998). Unlike ``estimate ± t·se`` it does not collapse to a point when no slot of the
    sample has a violation (with 2 slots per use case, most axes of the former quick preset: that interval
    covered 83%). NaN where :func:`slot_interval` is.
    """
    p = np.atleast_1d(np.asarray(estimate_pct, dtype=np.float64)) / 100.0
    arr = np.atleast_2d(np.asarray(reps_pct, dtype=np.float64)) / 100.0
    units = np.broadcast_to(np.asarray(n_units, dtype=np.float64), p.shape)
    factor, df = _overrides(p.size, n_slots, n_groups, None, None)
    if arr.shape[1] < 2:
        nan = np.full(p.size, np.nan)
        return nan, nan.copy()
    se = _slot_se(arr, factor)
    with np.errstate(divide="ignore", invalid="ignore"):
        informative = (se > 0) & (p > 0) & (p < 1)
        n_eff = np.minimum(units, np.where(informative, p * (1.0 - p) / (se * se), units))
        z = t_isf((1.0 - float(confidence)) / 2.0, np.where(np.isnan(df), 1.0, df))
        denom = 1.0 + z * z / n_eff
        center = (p + z * z / (2.0 * n_eff)) / denom
        half = z * np.sqrt(p * (1.0 - p) / n_eff + z * z / (4.0 * n_eff * n_eff)) / denom
    bad = np.isnan(df) | np.isnan(se) | ~(units > 0) | ~np.isfinite(p) | too_few_for_interval(n_slots, n_groups)
    low = np.where(bad, np.nan, np.clip(center - half, 0.0, 1.0) * 100.0)
    high = np.where(bad, np.nan, np.clip(center + half, 0.0, 1.0) * 100.0)
    return np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)


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
        p = 2.0 * t_sf(np.abs(est) / se, np.where(np.isnan(df), 1.0, df))
    p = np.where(est == 0.0, 1.0, p)
    p = np.where(np.isnan(df) | np.isnan(se) | ~np.isfinite(est), np.nan, p)
    return np.asarray(np.clip(p, 0.0, 1.0), dtype=np.float64)


def both_tests_pvalue(swap_p: float, interval_p: float) -> float:
    """The p behind a mark: the larger of the exact swap test's and the slot interval's t-test's.

    Each is a valid p-value (the swap test exactly, under "the condition changes nothing"; the t-test
    as simulated), and so is their maximum: P(max ≤ t) ≤ P(swap p ≤ t) ≤ t. A mark thus needs both —
    the arrangement of the matched slots' answers *and* the gap's size against their spread — so an
    unusually uniform sign pattern of small gaps (10 of 10 slots one way, p 0.002) is not marked when
    the interval says the gap is within noise, and a large mean driven by one slot is not marked when
    the swap test says the arrangement is ordinary. NaN when either is (no interval, no test).
    """
    return float(max(swap_p, interval_p)) if swap_p == swap_p and interval_p == interval_p else float("nan")


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


def earned_marks(frame: pd.DataFrame, *, p_col: str = "p_value", n_col: str = "n_slots",
                 interval: tuple[str, str] = ("ci_low", "ci_high"), family: Sequence[str] = ("model",),
                 min_slots: int = MIN_SLOTS, alpha: float = ALPHA) -> pd.DataFrame:
    """``frame`` with ``testable``, ``q_value`` and ``significant``: the one rule behind every mark.

    ``testable``: at least ``min_slots`` independent units (``n_col``: matched slots, clusters);
    ``q_value``: Benjamini–Hochberg within each ``family`` over the testable rows
    (:func:`family_marks`); ``significant``: q ≤ ``alpha`` *and* the 95% interval (``interval``
    columns) excludes 0 — a mark never sits on an interval that contains 0 (with no interval, no mark).
    """
    if frame.empty:
        return frame
    frame = frame.copy()
    frame["testable"] = pd.to_numeric(frame[n_col], errors="coerce").fillna(0).to_numpy() >= min_slots
    q, marks = family_marks(frame, p_col=p_col, family=family, testable=frame["testable"], alpha=alpha)
    low = pd.to_numeric(frame[interval[0]], errors="coerce").to_numpy(np.float64)
    high = pd.to_numeric(frame[interval[1]], errors="coerce").to_numpy(np.float64)
    frame["q_value"], frame["significant"] = q, marks & ((low > 0) | (high < 0))
    return frame


def too_few_text(n_slots: int | float, unit: str = "matched prompts") -> str:
    """The report's words for a comparison that is not tested (``unit``: what was counted, e.g. jobs)."""
    n = int(n_slots) if n_slots == n_slots else 0
    return f"too few {unit} to test (n = {n})"
