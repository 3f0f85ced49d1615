"""Spearman rank correlation, single and pairwise (paper §6 Fig. 5, App. B, App. D).

Used for question-variant robustness (min pairwise ρ between variant-wise identifier rankings),
profile rank agreement (mean pairwise ρ between identifier columns) and language moderation
(ρ between identifier rankings in two languages).

Decisions:

- Ties get average ranks; ρ is the Pearson correlation of the ranks — identical to
  :func:`scipy.stats.spearmanr` including ties.
- A constant input (all values tied) has no ranking: ρ and its p-value are NaN.
- The p-value is two-sided from the t distribution with n − 2 degrees of freedom, as scipy does;
  |ρ| = 1 gives p = 0. Fewer than 3 observations: p is NaN (ρ is defined from 2).
- :func:`spearman` drops positions where either input is NaN. The pairwise forms require complete
  data (the callers drop incomplete rows first and say so).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy import stats

from counterbench.stats.arrays import FloatArray

__all__ = ["mean_pairwise_spearman", "min_pairwise_spearman", "pairwise_spearman", "spearman"]



def _pearson_rows(ranks: FloatArray) -> FloatArray:
    """Correlation matrix between the rows of ``ranks`` (NaN for constant rows)."""
    centred = ranks - ranks.mean(axis=-1, keepdims=True)
    gram = centred @ np.swapaxes(centred, -1, -2)
    ss = np.diagonal(gram, axis1=-2, axis2=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        corr = gram / np.sqrt(ss[..., :, None] * ss[..., None, :])
    corr = np.clip(corr, -1.0, 1.0)
    return np.asarray(corr, dtype=np.float64)


def spearman(x: npt.ArrayLike, y: npt.ArrayLike) -> tuple[float, float]:
    """Spearman ρ and its two-sided p-value for two equal-length vectors (NaN pairs dropped)."""
    xa = np.asarray(x, dtype=np.float64).ravel()
    ya = np.asarray(y, dtype=np.float64).ravel()
    if xa.size != ya.size:
        raise ValueError("spearman: x and y must have the same length")
    ok = ~(np.isnan(xa) | np.isnan(ya))
    n = int(ok.sum())
    if n < 2:
        return float("nan"), float("nan")
    ranks = np.vstack([stats.rankdata(xa[ok]), stats.rankdata(ya[ok])])
    rho = float(_pearson_rows(ranks)[0, 1])
    if n < 3 or np.isnan(rho):
        return rho, float("nan")
    if abs(rho) >= 1.0:
        return rho, 0.0
    t = rho * np.sqrt((n - 2) / ((1.0 - rho) * (1.0 + rho)))
    return rho, float(2.0 * stats.t.sf(abs(t), n - 2))


def pairwise_spearman(matrix: npt.ArrayLike, *, axis: int = 0) -> FloatArray:
    """Spearman ρ between every pair of rankings in a complete matrix.

    ``axis=0``: each *column* is a ranking over the rows (e.g. identifier columns ranking profiles);
    ``axis=1``: each *row* is a ranking over the columns. Works on stacks (..., r, c) too.
    Returns the (m × m) correlation matrix (NaN rows/columns for constant rankings).
    """
    data = np.asarray(matrix, dtype=np.float64)
    if data.ndim < 2:
        raise ValueError("pairwise_spearman expects a matrix")
    if np.isnan(data).any():
        raise ValueError("pairwise_spearman: the matrix must be complete (drop incomplete rows first)")
    rankings = np.swapaxes(data, -1, -2) if axis in (0, -2) else data
    ranks = stats.rankdata(rankings, method="average", axis=-1)
    return _pearson_rows(np.asarray(ranks, dtype=np.float64))


def _upper(corr: FloatArray) -> FloatArray:
    m = corr.shape[-1]
    iu, ju = np.triu_indices(m, 1)
    return np.asarray(corr[..., iu, ju], dtype=np.float64)


def min_pairwise_spearman(matrix: npt.ArrayLike, *, axis: int = 0) -> float:
    """Minimum pairwise ρ between rankings (App. B robustness); NaN if any pair is undefined."""
    upper = _upper(pairwise_spearman(matrix, axis=axis))
    return float(upper.min()) if upper.size and not np.isnan(upper).any() else float("nan")


def mean_pairwise_spearman(matrix: npt.ArrayLike, *, axis: int = 0) -> float:
    """Mean pairwise ρ between rankings (App. D profile rank agreement), undefined pairs ignored."""
    upper = _upper(pairwise_spearman(matrix, axis=axis))
    upper = upper[~np.isnan(upper)]
    return float(upper.mean()) if upper.size else float("nan")
