"""Confidence intervals: percentile (for bootstrap replicates) and Wilson score (for proportions).

Used for Mean Δ% and Violation@τ (paper §4.2: Wilson and
bootstrap CIs).

Decisions:

- Percentile intervals use ``numpy.nanquantile`` with linear interpolation (numpy's default, the
  same as R's type 7) at α/2 and 1 − α/2; NaN replicates (a statistic undefined in a resample) are
  ignored, and the interval is NaN when every replicate is NaN.
- Wilson intervals are the score interval without continuity correction, identical to
  ``statsmodels.stats.proportion.proportion_confint(method="wilson")``; they are returned on the
  proportion scale (0–1), NaN when n = 0.
"""

from __future__ import annotations

import warnings

import numpy as np
import numpy.typing as npt

from counterbench.stats.arrays import FloatArray

__all__ = ["check_confidence", "percentile_interval", "wilson_interval"]



def check_confidence(confidence: float) -> float:
    """Return ``confidence`` as a float after checking that it lies strictly between 0 and 1."""
    level = float(confidence)
    if not 0.0 < level < 1.0:
        raise ValueError(f"confidence must be between 0 and 1 (exclusive), got {confidence!r}")
    return level


def percentile_interval(
    replicates: npt.ArrayLike, confidence: float = 0.95, *, axis: int = -1
) -> tuple[FloatArray, FloatArray]:
    """Percentile bootstrap interval of ``replicates`` along ``axis``.

    Returns ``(low, high)``; 0-d arrays for 1-d input. NaN replicates are ignored.
    """
    level = check_confidence(confidence)
    reps = np.asarray(replicates, dtype=np.float64)
    alpha = 1.0 - level
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        low, high = np.nanquantile(reps, [alpha / 2.0, 1.0 - alpha / 2.0], axis=axis)
    return np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)


def wilson_interval(
    successes: npt.ArrayLike, n: npt.ArrayLike, confidence: float = 0.95
) -> tuple[FloatArray, FloatArray]:
    """Wilson score interval for a binomial proportion, vectorised (spec §3, Violation@τ).

    ``center = (p + z²/2n) / (1 + z²/n)``, ``half = z √(p(1−p)/n + z²/4n²) / (1 + z²/n)`` with
    ``z`` the two-sided normal quantile. Returns ``(low, high)`` on the 0–1 scale; NaN when n = 0.
    """
    from counterbench.stats.distributions import norm_isf  # here: the bootstraps import this module, few need it

    level = check_confidence(confidence)
    k = np.asarray(successes, dtype=np.float64)
    total = np.asarray(n, dtype=np.float64)
    z = float(norm_isf((1.0 - level) / 2.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        p = k / total
        denom = 1.0 + z * z / total
        center = (p + z * z / (2.0 * total)) / denom
        half = z * np.sqrt(p * (1.0 - p) / total + z * z / (4.0 * total * total)) / denom
    bad = ~(total > 0)
    low = np.where(bad, np.nan, center - half)
    high = np.where(bad, np.nan, center + half)
    return np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)
