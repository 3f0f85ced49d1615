"""Combining and correcting p-values (paper §4.2 and App. A.2).

- Fisher's method combines the Friedman p-values of one axis across use cases:
  X = −2 Σ ln p_i ~ χ²_{2m} under the joint null.
- Benjamini–Hochberg FDR adjustment, applied across models within each axis column and across all
  cells (the analyses report both).

Decisions:

- NaN p-values (e.g. a fully tied cell under the release profile, or a cell with too few
  profiles) are ignored: Fisher combines the others; BH leaves NaN in place and does not count them
  in m. Fisher over no p-value is NaN.
- A p-value of exactly 0 gives X = ∞ and a combined p of 0.
- BH adjusted values are ``min_{j ≥ i} p_(j) m / j`` clipped at 1 (the step-up procedure), identical
  to ``statsmodels.stats.multitest.multipletests(method="fdr_bh")``; ``reject`` is adjusted ≤ α.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from counterbench.stats.arrays import FloatArray
from counterbench.stats.distributions import chi2_sf

__all__ = ["benjamini_hochberg", "fisher_combine"]



def _check_pvalues(p: FloatArray) -> None:
    finite = p[~np.isnan(p)]
    if np.any((finite < 0) | (finite > 1)):
        raise ValueError("p-values must lie in [0, 1]")


def fisher_combine(pvalues: npt.ArrayLike) -> tuple[float, float]:
    """Fisher's combined test: returns ``(statistic, pvalue)`` with statistic = −2 Σ ln p.

    Matches ``scipy.stats.combine_pvalues(method="fisher")``; NaNs are ignored (see module notes).
    """
    p = np.asarray(pvalues, dtype=np.float64).ravel()
    _check_pvalues(p)
    p = p[~np.isnan(p)]
    if p.size == 0:
        return float("nan"), float("nan")
    with np.errstate(divide="ignore"):
        statistic = float(-2.0 * np.log(p).sum())
    return statistic, float(chi2_sf(statistic, 2 * p.size))


def benjamini_hochberg(pvalues: npt.ArrayLike, alpha: float = 0.05) -> tuple[FloatArray, npt.NDArray[np.bool_]]:
    """Benjamini–Hochberg adjusted p-values and rejections at FDR ``alpha``, any input shape.

    Returns ``(adjusted, reject)`` with the input's shape; NaN inputs stay NaN and are not rejected.
    """
    p = np.asarray(pvalues, dtype=np.float64)
    _check_pvalues(p)
    flat = p.ravel()
    ok = np.flatnonzero(~np.isnan(flat))
    adjusted = np.full(flat.shape, np.nan)
    m = ok.size
    if m:
        order = np.argsort(flat[ok], kind="mergesort")
        ranked = flat[ok][order] * m / np.arange(1, m + 1)
        stepped = np.minimum.accumulate(ranked[::-1])[::-1]
        values = np.empty(m)
        values[order] = np.minimum(stepped, 1.0)
        adjusted[ok] = values
    reject = np.zeros(flat.shape, dtype=bool)
    reject[ok] = adjusted[ok] <= alpha
    return adjusted.reshape(p.shape), reject.reshape(p.shape)
