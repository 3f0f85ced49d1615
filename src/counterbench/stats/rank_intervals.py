"""Joint confidence intervals for ranks, from bootstrap replicates of every ranked item. Pure.

Ranking models by an estimate (smallest gap first) says nothing about how sure the order is. A
*joint* 95% rank interval gives every item a range of ranks such that, with 95% probability, every
item's true rank lies in its range at once. The construction is the one of Klein, Wright and Wieczorek
(*Joint confidence sets for the rankings of populations*, 2020): simultaneous confidence intervals for
every pairwise difference ``θ_i − θ_j``; item ``j`` is *surely better* than ``i`` when the whole interval
of ``θ_j − θ_i`` lies below 0, and

    rank_low(i)  = 1 + #{j surely better than i}
    rank_high(i) = n − #{j surely worse than i}.

Whenever all pairwise intervals cover (probability ≥ 95%), every true rank — defined with ties as
``1 + #{j: θ_j < θ_i}`` — lies in its interval.

Decisions:

- **Simultaneous intervals** of the differences: ``d̂_ij ± c · se_ij``, ``se_ij`` the bootstrap standard
  error of the replicated difference (both items from the same replicates: a paired bootstrap) times
  ``sqrt(factor)`` (the small-sample variance factor of :func:`counterbench.stats.inference.slot_design`),
  and ``c`` the 95% quantile of the bootstrap max-t statistic ``max_ij |d*_ij − d̂_ij| / se*_ij`` (at
  least the normal quantile of one pair), scaled by ``t_df / z`` — with few slots the t tail is put back
  as for a single interval (:func:`counterbench.stats.inference.slot_interval`).
- A pair whose replicates have no spread (identical items) is never "surely" ordered.
- Items with a NaN estimate get no rank and do not count among the ranked.
- ``benchmarks/model_comparison_coverage.py`` measures the joint coverage.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from counterbench.stats.arrays import FloatArray
from counterbench.stats.distributions import norm_isf, t_isf

__all__ = ["joint_rank_intervals", "point_ranks"]


def point_ranks(estimates: npt.ArrayLike) -> FloatArray:
    """1 + the number of items with a strictly smaller estimate (ties share the best rank); NaN stays NaN."""
    est = np.asarray(estimates, dtype=np.float64).ravel()
    ok = np.isfinite(est)
    ranks = np.full(est.size, np.nan)
    ranks[ok] = 1.0 + (est[ok][None, :] < est[ok][:, None]).sum(axis=1)
    return ranks


def joint_rank_intervals(estimates: npt.ArrayLike, replicates: npt.ArrayLike, *, confidence: float = 0.95,
                         factor: float = 1.0, df: float = np.inf) -> tuple[FloatArray, FloatArray]:
    """(rank_low, rank_high) per item: joint ``confidence`` rank intervals (smaller estimate = better rank).

    ``estimates``: one per item; ``replicates``: items × replicates, the same bootstrap draws for every
    item. NaN where an item has no finite estimate; ``[1, n]`` everywhere when there are fewer than 2
    replicates (no information about the order).
    """
    est = np.asarray(estimates, dtype=np.float64).ravel()
    reps = np.atleast_2d(np.asarray(replicates, dtype=np.float64))
    ok = np.flatnonzero(np.isfinite(est))
    low = np.full(est.size, np.nan)
    high = np.full(est.size, np.nan)
    n = ok.size
    if n == 0:
        return low, high
    low[ok], high[ok] = 1.0, float(n)
    if n < 2 or reps.shape[1] < 2:
        return low, high
    e, r = est[ok], reps[ok]
    i, j = np.triu_indices(n, k=1)
    diff = e[i] - e[j]
    rdiff = r[i] - r[j]  # pairs × replicates
    finite = np.isfinite(rdiff)
    with np.errstate(invalid="ignore", divide="ignore"):
        count = finite.sum(axis=1)
        mean = np.where(finite, rdiff, 0.0).sum(axis=1) / count
        sd = np.sqrt(np.where(finite, (rdiff - mean[:, None]) ** 2, 0.0).sum(axis=1) / (count - 1))
        se = sd * np.sqrt(factor)
        spread = (count >= 2) & (sd > 0)
        t_max = np.nanmax(np.where(spread[:, None], np.abs(rdiff - diff[:, None]) / sd[:, None], np.nan), axis=0) \
            if spread.any() else np.full(rdiff.shape[1], np.nan)
    t_max = t_max[np.isfinite(t_max)]
    z = float(norm_isf((1.0 - confidence) / 2.0))
    tails = float(t_isf((1.0 - confidence) / 2.0, df)) / z if np.isfinite(df) and df > 0 else 1.0
    crit = (max(float(np.quantile(t_max, confidence)), z) if t_max.size else np.inf) * tails
    with np.errstate(invalid="ignore"):
        upper = diff + crit * se  # θ_i − θ_j < 0 surely: i better than j
        lower = diff - crit * se
    i_better = spread & (upper < 0)
    j_better = spread & (lower > 0)
    better_than = np.zeros(n)  # how many items each is surely better than
    worse_than = np.zeros(n)  # how many items are surely better than it
    np.add.at(better_than, i[i_better], 1)
    np.add.at(worse_than, j[i_better], 1)
    np.add.at(better_than, j[j_better], 1)
    np.add.at(worse_than, i[j_better], 1)
    low[ok] = 1.0 + worse_than
    high[ok] = n - better_than
    return low, high
