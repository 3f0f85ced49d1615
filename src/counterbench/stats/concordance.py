"""Kendall's W and the Friedman test for identifier-ranking consistency (paper §4.2, App. A.2).

For one model × language × use case × axis the analyses build a matrix with profiles as *blocks*
(rows) and identifiers as *treatments* (columns), values averaged over question variants. Each row
is ranked (average ranks for ties) and

    χ² = (12 / (n k (k+1)) · Σ_j R_j² − 3 n (k+1)) / C,    C = 1 − Σ_i T_i / (n k (k² − 1)),
    W  = χ² / (n (k − 1)),                                 p = P(χ²_{k−1} > χ²),

with R_j the column rank sums and T_i = Σ (t³ − t) over the tie groups of row i — the same tie
correction as :func:`scipy.stats.friedmanchisquare` (which this module matches to 1e-12).

Decisions:

- **Fully tied matrix** (every row gives every identifier the same value, so C = 0): W = 0 and
  p = 1, with ``fully_tied=True`` (spec §3: counted). With ``fully_tied="drop"`` (the
  release profile, which dropped such cells) W and p are NaN instead.
- **Missing values** (2-D input): rows (profiles) with any NaN are dropped ("profiles with a gap
  dropped"); the stacked 3-D form requires complete matrices.
- Fewer than 2 blocks or 2 treatments after dropping: W, χ² and p are NaN.
- T_i is computed exactly from the average ranks: Σ_j r_ij² = k(k+1)(2k+1)/6 − T_i/12.
- k = 2 is allowed (scipy requires k ≥ 3; the formula holds for any k ≥ 2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy import stats

from counterbench.stats.arrays import FloatArray

__all__ = ["FriedmanResult", "friedman_kendall_w", "friedman_kendall_w_stacked", "kendalls_w"]

TiedPolicy = Literal["zero", "drop"]


@dataclass(frozen=True)
class FriedmanResult:
    """Friedman χ² (tie-corrected), its p-value and Kendall's W for one blocks × treatments matrix."""

    statistic: float
    pvalue: float
    kendalls_w: float
    n_blocks: int
    n_treatments: int
    fully_tied: bool


def _friedman_arrays(
    data: FloatArray, fully_tied: TiedPolicy
) -> tuple[FloatArray, FloatArray, FloatArray, npt.NDArray[np.bool_]]:
    """Vectorised core over the leading axes of a (..., n, k) array without NaN."""
    n, k = data.shape[-2], data.shape[-1]
    lead = data.shape[:-2]
    if n < 2 or k < 2:
        nan = np.full(lead, np.nan)
        return nan, nan.copy(), nan.copy(), np.zeros(lead, dtype=bool)
    ranks = stats.rankdata(data, method="average", axis=-1)
    rank_sums = ranks.sum(axis=-2)
    ssbn = (rank_sums**2).sum(axis=-1)
    tie_terms = 12.0 * (k * (k + 1) * (2 * k + 1) / 6.0 - (ranks**2).sum(axis=-1))
    correction = 1.0 - tie_terms.sum(axis=-1) / (k * (k * k - 1) * n)
    tied = correction <= 1e-12
    numerator = 12.0 / (n * k * (k + 1)) * ssbn - 3.0 * n * (k + 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        chi2 = np.where(tied, 0.0, numerator / np.where(tied, 1.0, correction))
    chi2 = np.maximum(chi2, 0.0)
    w = chi2 / (n * (k - 1))
    p = stats.chi2.sf(chi2, k - 1)
    if fully_tied == "drop":
        chi2 = np.where(tied, np.nan, chi2)
        w = np.where(tied, np.nan, w)
        p = np.where(tied, np.nan, p)
    else:
        p = np.where(tied, 1.0, p)
    return (
        np.asarray(chi2, dtype=np.float64),
        np.asarray(p, dtype=np.float64),
        np.asarray(w, dtype=np.float64),
        np.asarray(tied, dtype=bool),
    )


def _check_policy(fully_tied: str) -> TiedPolicy:
    if fully_tied not in ("zero", "drop"):
        raise ValueError(f'fully_tied must be "zero" or "drop", got {fully_tied!r}')
    return "zero" if fully_tied == "zero" else "drop"


def friedman_kendall_w(matrix: npt.ArrayLike, *, fully_tied: TiedPolicy = "zero") -> FriedmanResult:
    """Friedman test and Kendall's W for one blocks (rows) × treatments (columns) matrix.

    Paper §4.2 / App. A.2: rows are base profiles, columns identifiers. Rows with any NaN are
    dropped first. See the module docstring for the formula and the fully-tied decision.
    """
    policy = _check_policy(fully_tied)
    data = np.asarray(matrix, dtype=np.float64)
    if data.ndim != 2:
        raise ValueError(f"friedman_kendall_w expects a 2-D matrix, got shape {data.shape}")
    data = data[~np.isnan(data).any(axis=1)]
    chi2, p, w, tied = _friedman_arrays(data, policy)
    return FriedmanResult(
        statistic=float(chi2),
        pvalue=float(p),
        kendalls_w=float(w),
        n_blocks=int(data.shape[0]),
        n_treatments=int(data.shape[1]),
        fully_tied=bool(tied),
    )


def friedman_kendall_w_stacked(
    matrices: npt.ArrayLike, *, fully_tied: TiedPolicy = "zero"
) -> tuple[FloatArray, FloatArray, FloatArray, npt.NDArray[np.bool_]]:
    """Vectorised Friedman/Kendall's W over a stack of same-shape matrices (..., n, k).

    Returns ``(statistic, pvalue, kendalls_w, fully_tied)`` arrays of shape ``(...)``. Matrices
    must be complete (no NaN); use :func:`friedman_kendall_w` for matrices with gaps.
    """
    policy = _check_policy(fully_tied)
    data = np.asarray(matrices, dtype=np.float64)
    if data.ndim < 2:
        raise ValueError(f"friedman_kendall_w_stacked expects (..., n, k) input, got shape {data.shape}")
    if np.isnan(data).any():
        raise ValueError("friedman_kendall_w_stacked: matrices must not contain NaN (drop incomplete rows)")
    return _friedman_arrays(data, policy)


def kendalls_w(matrix: npt.ArrayLike, *, fully_tied: TiedPolicy = "zero") -> float:
    """Kendall's W (tie-corrected) of a blocks × treatments matrix; see :func:`friedman_kendall_w`."""
    return friedman_kendall_w(matrix, fully_tied=fully_tied).kendalls_w
