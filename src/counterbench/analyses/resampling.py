"""Stratified bootstrap of pooled means (Mean Δ%, Violation@τ) for every table cell at once.

Why this module exists next to :mod:`counterbench.stats.bootstrap`: a full analysis of the built-in amount study pools
~3.5 million pairs (9 models) into dozens of cells per model, each needing 2,000 replicates.
Resampling pair *indices* costs ~12 ns per drawn pair on a 2-core machine — about 100 s for the
leaderboard alone. This module keeps the paper's method (percentile bootstrap over matched pairs,
2,000 replicates) and the spec's cluster bootstrap over slots, with two decisions that make it fast:

- **Stratified resampling.** Values are resampled within *strata* (for Mean Δ%: model × language ×
  use case × axis, whose pair counts the design fixes); the replicate of any coarser cell (an axis,
  a language, a model) is the pooled mean of its strata's replicate sums. One set of replicates
  therefore serves every table, and cells that contain each other get consistent intervals. The
  paper resampled each cell's pairs without strata; with fixed design counts the stratified
  bootstrap is the matching scheme and differs only by the (design-fixed) stratum-size noise.
- **Binned multinomial draws (exact when a stratum has ≤ ``bins`` distinct values).** Drawing n
  values with replacement is a multinomial count over the values. The sorted values of a stratum
  are cut into ``bins`` (16) equal-count bins; each replicate draws the bin counts exactly
  (``Generator.multinomial``) and adds, for the spread *inside* the bins, one shifted-gamma term
  with the exact conditional variance ``Σ c_b σ_b²`` and third cumulant ``Σ c_b κ3_b`` (sums of
  independent draws add cumulants). Every replicate has the exact conditional mean, variance and
  skewness of index resampling; only higher within-bin cumulants are smoothed. Against index
  resampling the interval ends differ by ≤ ~2% of the half-width, the Monte Carlo noise of the
  replicates, also for lognormal data with σ = 2 (``tests/analyses/test_resampling.py``). Strata
  with at most ``bins`` distinct values (identical LLM answers: Δ% = 0) are resampled exactly.

Other decisions:

- Violation@τ (pairs): per stratum the violation count of a resample is Binomial(n, k/n) — exact.
- Cluster bootstrap (slots): within each stratum the slots are resampled with replacement
  (:func:`counterbench.stats.cluster_bootstrap.cluster_weights`); a replicate is Σ sums / Σ counts.
- NaN values are dropped before everything; a stratum without values contributes nothing.
- Streams: every stratum draws from its own generator seeded by
  :func:`counterbench.stats.seeding.stable_seed` of (label, stratum key, base seed), so adding a
  model or a use case never changes another cell's numbers.
- ``n_boot = 0`` skips resampling: intervals are NaN.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from counterbench.stats.arrays import FloatArray, IntArray
from counterbench.stats.cluster_bootstrap import cluster_weights
from counterbench.stats.inference import slot_interval, slot_proportion_interval
from counterbench.stats.intervals import percentile_interval, wilson_interval
from counterbench.stats.seeding import stable_seed

__all__ = [
    "DEFAULT_BINS",
    "CellReplicates",
    "StrataBootstrap",
    "binned_replicate_sums",
    "bootstrap_strata",
    "cell_replicates",
    "percentiles",
    "slot_bootstrap",
    "summarise_cells",
]

DEFAULT_BINS = 16


def _within_draw(k2: FloatArray, k3: FloatArray, rng: np.random.Generator) -> FloatArray:
    """One draw per replicate with mean 0, variance ``k2`` and third cumulant ``k3`` (shifted gamma,
    mirrored for negative skew; normal when the skew is negligible)."""
    z = rng.standard_normal(k2.size)
    with np.errstate(divide="ignore", invalid="ignore"):
        skew = np.where(k2 > 0, k3 / k2**1.5, 0.0)
    use = np.abs(skew) > 1e-3
    if use.any():
        shape = 4.0 / skew[use] ** 2
        z[use] = np.sign(skew[use]) * (rng.standard_gamma(shape) - shape) / np.sqrt(shape)
    return np.asarray(np.sqrt(k2) * z, dtype=np.float64)


def binned_replicate_sums(values: npt.ArrayLike, n_boot: int, rng: np.random.Generator,
                          bins: int = DEFAULT_BINS) -> FloatArray:
    """Replicate sums of ``n`` draws with replacement from ``values`` (NaN dropped), binned.

    See the module docstring. Exact (a multinomial over the distinct values) when there are at most
    ``bins`` distinct values.
    """
    x = np.asarray(values, dtype=np.float64).ravel()
    x = np.sort(x[~np.isnan(x)])
    n = x.size
    if n == 0 or n_boot <= 0:
        return np.full(max(int(n_boot), 0), np.nan)
    new_value = np.empty(n, dtype=bool)
    new_value[0] = True
    np.not_equal(x[1:], x[:-1], out=new_value[1:])
    if int(new_value.sum()) <= bins:
        starts = np.flatnonzero(new_value)
    else:
        starts = np.unique(np.linspace(0, n, bins + 1)[:-1].round().astype(np.int64))
    sizes = np.diff(np.append(starts, n))
    means = np.add.reduceat(x, starts) / sizes
    counts = rng.multinomial(n, sizes / n, size=int(n_boot)).astype(np.float64)
    total = np.asarray(counts @ means, dtype=np.float64)
    dev = x - np.repeat(means, sizes)
    m2 = np.add.reduceat(dev * dev, starts) / sizes
    if m2.any():
        m3 = np.add.reduceat(dev * dev * dev, starts) / sizes
        total += _within_draw(counts @ m2, counts @ m3, rng)
    return total


def slot_bootstrap(sufficient: npt.ArrayLike, statistic: Callable[[FloatArray], FloatArray], n_boot: int,
                   seed: int, confidence: float = 0.95) -> tuple[float, float, float]:
    """Cluster (slot) bootstrap of ``statistic`` over additive per-slot statistics, all replicates at once.

    ``sufficient``: slots × m; ``statistic`` maps (r × m) totals to r values. Returns (estimate, low,
    high); the interval is NaN when ``n_boot`` is 0 or there are no slots. One generator per call
    (``seed``), multiplicities from :func:`counterbench.stats.cluster_bootstrap.cluster_weights`.
    """
    suff = np.asarray(sufficient, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        estimate = float(statistic(suff.sum(axis=0)[None, :])[0]) if suff.shape[0] else float("nan")
        if n_boot <= 0 or suff.shape[0] == 0:
            return estimate, float("nan"), float("nan")
        weights = cluster_weights(np.random.default_rng(seed), suff.shape[0], int(n_boot))
        reps = statistic(weights @ suff)
    low, high = percentiles(reps, confidence)
    return estimate, float(low), float(high)


@dataclass(frozen=True)
class StrataBootstrap:
    """Per-stratum totals and bootstrap replicate totals (arrays are S, or S × n_boot).

    ``n``: defined values; ``total``: their sum; ``exceed``: values > τ. ``pair_sums`` /
    ``exceed_reps``: replicate sums / violation counts resampling values (pairs);
    ``slot_sums`` / ``slot_counts`` / ``slot_exceed``: the same resampling slots (clusters).
    ``n_slots``: slots with a value per stratum; ``group``: strata with the same code share their slot
    resamples (e.g. the axes of one model × language × use case), which the interval's small-sample
    expansion (:mod:`counterbench.stats.inference`) needs to count independent slots.
    """

    keys: pd.DataFrame
    n: FloatArray
    total: FloatArray
    exceed: FloatArray
    n_slots: FloatArray
    group: npt.NDArray[np.int64]
    pair_sums: FloatArray
    exceed_reps: FloatArray
    slot_sums: FloatArray
    slot_counts: FloatArray
    slot_exceed: FloatArray
    n_boot: int
    tau: float


def _key_parts(row: Sequence[object]) -> tuple[object, ...]:
    return tuple(v.item() if isinstance(v, np.generic) else (str(v) if not isinstance(v, int | float) else v)
                 for v in row)


def bootstrap_strata(
    values: npt.ArrayLike,
    strata: npt.ArrayLike,
    keys: pd.DataFrame,
    clusters: npt.ArrayLike,
    *,
    n_boot: int,
    seed: int,
    tau: float,
    label: str,
    bins: int = DEFAULT_BINS,
    cluster_weights_for: Callable[[int, IntArray], FloatArray] | None = None,
    groups: npt.ArrayLike | None = None,
) -> StrataBootstrap:
    """Bootstrap every stratum of ``values``.

    ``strata``: stratum code per value (row index into ``keys``); ``clusters``: cluster (slot) code
    per value, any integers. ``label`` names the family in the seeds (e.g. ``"mean_delta"``).
    ``cluster_weights_for(stratum, cluster_codes)``, when given, supplies the cluster multiplicities
    (n_boot × len(cluster_codes)) — e.g. a :class:`~counterbench.analyses.slots.SlotResampler`
    shared with other tables; otherwise each stratum draws its own. ``groups`` (one code per stratum):
    strata that share their cluster multiplicities (default: none do).
    """
    x = np.asarray(values, dtype=np.float64).ravel()
    codes = np.asarray(strata, dtype=np.int64).ravel()
    slot = np.asarray(clusters, dtype=np.int64).ravel()
    n_strata, reps = len(keys), max(int(n_boot), 0)
    n = np.zeros(n_strata)
    total = np.zeros(n_strata)
    exceed = np.zeros(n_strata)
    n_slots = np.zeros(n_strata)
    out = {name: np.full((n_strata, reps), np.nan) for name in
           ("pair_sums", "exceed_reps", "slot_sums", "slot_counts", "slot_exceed")}
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(n_strata + 1))
    key_rows = list(keys.itertuples(index=False, name=None))
    for s in range(n_strata):
        seg = order[bounds[s] : bounds[s + 1]]
        xs = x[seg]
        ok = ~np.isnan(xs)
        xs, ss = xs[ok], slot[seg][ok]
        n[s], total[s], exceed[s] = xs.size, xs.sum(), np.count_nonzero(xs > tau)
        n_slots[s] = np.unique(ss).size
        if xs.size == 0 or reps == 0:
            continue
        parts = _key_parts(key_rows[s])
        rng = np.random.default_rng(stable_seed(label, "pairs", *parts, base_seed=seed))
        out["pair_sums"][s] = binned_replicate_sums(xs, reps, rng, bins)
        out["exceed_reps"][s] = rng.binomial(xs.size, exceed[s] / xs.size, size=reps)
        slot_codes, uniques = pd.factorize(ss)
        k = int(slot_codes.max()) + 1
        suff = np.column_stack([
            np.bincount(slot_codes, weights=xs, minlength=k),
            np.bincount(slot_codes, minlength=k).astype(np.float64),
            np.bincount(slot_codes, weights=(xs > tau).astype(np.float64), minlength=k),
        ])
        if cluster_weights_for is not None:
            weights = cluster_weights_for(s, np.asarray(uniques, dtype=np.int64))
        else:
            weights = cluster_weights(np.random.default_rng(stable_seed(label, "slots", *parts, base_seed=seed)),
                                      k, reps)
        totals = np.einsum("rk,km->rm", weights, suff)  # skinny product: no BLAS threads
        out["slot_sums"][s], out["slot_counts"][s], out["slot_exceed"][s] = totals.T
    group = (np.arange(n_strata, dtype=np.int64) if groups is None
             else np.asarray(groups, dtype=np.int64).ravel())
    return StrataBootstrap(keys=keys.reset_index(drop=True), n=n, total=total, exceed=exceed, n_slots=n_slots,
                           group=group, n_boot=reps, tau=float(tau), **out)


@dataclass(frozen=True)
class CellReplicates:
    """Pooled estimates and replicates of table cells (one row of ``keys`` per cell)."""

    keys: pd.DataFrame
    n: FloatArray
    mean: FloatArray
    exceed: FloatArray
    pair: FloatArray  # (G, R) replicate means, resampling pairs
    cluster: FloatArray  # (G, R) replicate means, resampling slots
    violation_pair: FloatArray  # (G, R) replicate Violation@τ in %, resampling pairs
    violation_cluster: FloatArray  # (G, R)
    n_slots: FloatArray  # (G,) independent slots behind the cell's cluster interval
    n_groups: FloatArray  # (G,) independently resampled groups of slots


def _cell_slots(sb: StrataBootstrap, keep: npt.NDArray[np.bool_], g: npt.NDArray[np.integer], n_cells: int
                ) -> tuple[FloatArray, FloatArray]:
    """Per cell: the slots of its resample groups (max over a group's strata, summed) and the groups."""
    frame = pd.DataFrame({"cell": g, "group": sb.group[keep], "slots": sb.n_slots[keep]})
    frame = frame[frame["slots"] > 0]
    per_group = frame.groupby(["cell", "group"], sort=False)["slots"].max().reset_index()
    agg = per_group.groupby("cell")["slots"].agg(["sum", "size"])
    slots = np.zeros(n_cells)
    groups = np.zeros(n_cells)
    slots[agg.index.to_numpy()] = agg["sum"].to_numpy()
    groups[agg.index.to_numpy()] = agg["size"].to_numpy()
    return slots, groups


def cell_replicates(sb: StrataBootstrap, by: Sequence[str], mask: npt.ArrayLike | None = None) -> CellReplicates:
    """Pool strata into cells grouped by the key columns ``by`` (strata outside ``mask`` ignored)."""
    keep = np.ones(len(sb.keys), dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    keys = sb.keys.loc[keep, list(by)]
    grouped = keys.groupby(list(by), observed=True, sort=False, dropna=False)
    g = grouped.ngroup().to_numpy()
    order = np.argsort(g, kind="stable")
    starts = np.searchsorted(g[order], np.arange(grouped.ngroups))

    def pool(arr: FloatArray) -> FloatArray:
        sub = np.nan_to_num(arr[keep][order])
        if sub.shape[0] == 0:
            return np.zeros((0, *sub.shape[1:]))
        return np.asarray(np.add.reduceat(sub, starts, axis=0), dtype=np.float64)

    n, total, exceed = pool(sb.n), pool(sb.total), pool(sb.exceed)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(n > 0, total / n, np.nan)
        pair = pool(sb.pair_sums) / n[:, None]
        violation_pair = pool(sb.exceed_reps) * 100.0 / n[:, None]
        counts = pool(sb.slot_counts)
        cluster = pool(sb.slot_sums) / counts
        violation_cluster = pool(sb.slot_exceed) * 100.0 / counts
    cell_keys = keys.drop_duplicates().reset_index(drop=True)  # group numbers follow first appearance
    slots, groups = _cell_slots(sb, keep, g, grouped.ngroups)
    return CellReplicates(cell_keys, n, mean, exceed, pair, cluster, violation_pair, violation_cluster, slots,
                          groups)


def percentiles(reps: FloatArray, confidence: float, axis: int = -1) -> tuple[FloatArray, FloatArray]:
    """:func:`counterbench.stats.intervals.percentile_interval`, with ``numpy.quantile``'s faster path
    when no replicate is NaN (identical values: same linear interpolation)."""
    arr = np.asarray(reps, dtype=np.float64)
    if arr.size and not np.isnan(arr).any():
        alpha = 1.0 - confidence
        low, high = np.quantile(arr, [alpha / 2.0, 1.0 - alpha / 2.0], axis=axis)
        return np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)
    low, high = percentile_interval(arr, confidence, axis=axis)
    return np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)


def _interval(reps: FloatArray, confidence: float) -> tuple[FloatArray, FloatArray]:
    if reps.shape[1] == 0:
        nan = np.full(reps.shape[0], np.nan)
        return nan, nan.copy()
    return percentiles(reps, confidence, axis=1)


def _slot_interval(estimate: FloatArray, reps: FloatArray, cells: CellReplicates,
                   confidence: float, lower: float | None) -> tuple[FloatArray, FloatArray]:
    if reps.shape[1] == 0:
        nan = np.full(reps.shape[0], np.nan)
        return nan, nan.copy()
    return slot_interval(estimate, reps, cells.n_slots, cells.n_groups, confidence, lower=lower)


def summarise_cells(cells: CellReplicates, confidence: float = 0.95, *, nonnegative: bool = False) -> pd.DataFrame:
    """Tidy frame: keys + ``n_pairs, n_slots, mean_delta, ci_low, ci_high`` (the 95% CI: slots resampled,
    corrected for few slots, :func:`counterbench.stats.inference.slot_interval`; none on fewer slots per
    stratum group than its calibration supports; cut at 0 when ``nonnegative``: the values are
    absolute gaps, so their mean cannot be negative) ``, pair_ci_low,
    pair_ci_high`` (pairs resampled: the paper's method) ``, v10, v10_ci_low, v10_ci_high`` (slots:
    :func:`counterbench.stats.inference.slot_proportion_interval`)
    ``, v10_pair_ci_low, v10_pair_ci_high`` (pairs) ``, v10_wilson_ci_low, v10_wilson_ci_high``.

    ``v10`` holds Violation@τ in % for the τ of the bootstrap (10 unless told otherwise).
    """
    out = cells.keys.copy()
    for col in out.columns:
        if isinstance(out[col].dtype, pd.CategoricalDtype):
            out[col] = out[col].astype(object)
    out["n_pairs"] = cells.n.astype(np.int64)
    out["n_slots"] = cells.n_slots.astype(np.int64)
    out["mean_delta"] = cells.mean
    out["ci_low"], out["ci_high"] = _slot_interval(cells.mean, cells.cluster, cells, confidence,
                                                   0.0 if nonnegative else None)
    out["pair_ci_low"], out["pair_ci_high"] = _interval(cells.pair, confidence)
    with np.errstate(divide="ignore", invalid="ignore"):
        out["v10"] = np.where(cells.n > 0, cells.exceed * 100.0 / cells.n, np.nan)
    if cells.violation_cluster.shape[1]:  # Wilson on the slots' effective count (Korn–Graubard)
        out["v10_ci_low"], out["v10_ci_high"] = slot_proportion_interval(
            out["v10"].to_numpy(np.float64), cells.violation_cluster, cells.n, cells.n_slots, cells.n_groups,
            confidence)
    else:
        out["v10_ci_low"] = out["v10_ci_high"] = np.nan
    out["v10_pair_ci_low"], out["v10_pair_ci_high"] = _interval(cells.violation_pair, confidence)
    low, high = wilson_interval(cells.exceed, cells.n, confidence)
    out["v10_wilson_ci_low"], out["v10_wilson_ci_high"] = low * 100.0, high * 100.0
    return out
