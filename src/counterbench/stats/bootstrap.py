"""Percentile bootstrap for Mean Δ%, Violation@τ and their differences (paper §4.2; spec §3).

This module resamples *pairs* (units); :mod:`counterbench.stats.cluster_bootstrap` resamples
*slots*. Two resampling units are offered, reported side by side by the analyses:

- **pairs** (what the paper did: "nonparametric bootstrap resampling over matched counterfactual
  pairs with 2,000 bootstrap replicates");
- **slots** (cluster bootstrap): the pairs of one slot share their outputs and are not independent,
  so whole slots are resampled; each replicate is a ratio ``Σ sums / Σ counts`` of per-slot
  sufficient statistics, which makes it cheap.

Decisions:

- 2,000 replicates, 95% percentile intervals (:func:`~counterbench.stats.intervals.percentile_interval`),
  NaN values dropped before resampling; an empty input gives an all-NaN result.
- **Streams.** Replicates are drawn in fixed blocks of :data:`BLOCK_SIZE`, each block with its own
  child of ``numpy.random.SeedSequence(seed)``. Results depend only on the data and the seed, not
  on ``max_elements`` (the memory budget) or ``workers`` (threads). The children's generators are
  built by :mod:`counterbench.stats.streams` (the same states as numpy's ``spawn``, ~5× faster).
- **Memory.** At most ``max_elements`` random indices are alive per worker (default 2**22: 32 MB
  of int64 indices plus 32 MB of gathered float64); a 2,000 × n index matrix is never built.
  (int64 indices measured faster than uint32 here: numpy casts uint32 indices before gathering.)
  The tie shortcut adds a BLOCK_SIZE × (distinct repeated values) count matrix per worker.
- **Exact shortcut for ties.** Resampling n pairs is a multinomial draw over the distinct values.
  Values that occur at least ``tie_threshold`` times (LLM answers repeat a lot: Δ% = 0 whenever two
  identifiers get the same answer) are resampled through one multinomial count per distinct value;
  only the remaining values are resampled by index. Same distribution as plain index resampling,
  but a different random stream, hence different (equally valid) digits. Measured on 383,400
  pairs × 2,000 replicates (``benchmarks/stats_pair_bootstrap.py``): well under a second when
  answers repeat as LLM answers do, ~15 s when every Δ% is distinct (an exact pair bootstrap needs
  n random draws per replicate; ``resolution=0.01`` brings that to ~3 s).
- **Optional resolution.** ``resolution`` rounds values before resampling (never the estimate):
  CI endpoints move by at most ``resolution / 2``; off by default.
- **Violation@τ, pairs** uses the exact identity: the number of violations in a resample of n pairs
  is Binomial(n, k/n).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from counterbench.stats.arrays import FloatArray
from counterbench.stats.intervals import check_confidence, percentile_interval
from counterbench.stats.streams import spawned_generators

__all__ = [
    "BLOCK_SIZE",
    "BootstrapResult",
    "bootstrap_mean",
    "bootstrap_mean_difference",
    "bootstrap_violation_rate",
    "pair_replicate_means",
]

BLOCK_SIZE = 50
DEFAULT_MAX_ELEMENTS = 1 << 22
DEFAULT_TIE_THRESHOLD = 16


@dataclass(frozen=True)
class BootstrapResult:
    """A point estimate with its percentile bootstrap interval and how it was obtained."""

    estimate: float
    low: float
    high: float
    se: float
    n_units: int
    n_boot: int
    confidence: float
    seed: int
    method: str
    replicates: FloatArray | None = field(default=None, repr=False, compare=False)

    def excludes(self, value: float = 0.0) -> bool:
        """True when the interval lies strictly above or strictly below ``value``."""
        return bool(self.low > value or self.high < value)

    def as_dict(self, prefix: str = "") -> dict[str, Any]:
        """Flat dict for a results table (``estimate, ci_low, ci_high, se, n, ci_method, ...``)."""
        return {
            f"{prefix}estimate": self.estimate,
            f"{prefix}ci_low": self.low,
            f"{prefix}ci_high": self.high,
            f"{prefix}se": self.se,
            f"{prefix}n": self.n_units,
            f"{prefix}ci_method": self.method,
            f"{prefix}n_boot": self.n_boot,
            f"{prefix}seed": self.seed,
            f"{prefix}confidence": self.confidence,
        }


def _check(n_boot: int, confidence: float) -> None:
    if int(n_boot) < 1:
        raise ValueError(f"n_boot must be a positive integer, got {n_boot!r}")
    check_confidence(confidence)


def _result(
    estimate: float,
    replicates: FloatArray,
    *,
    n_units: int,
    n_boot: int,
    confidence: float,
    seed: int,
    method: str,
    keep: bool,
) -> BootstrapResult:
    if n_units == 0 or bool(np.isnan(replicates).all()):
        low = high = se = float("nan")
    else:
        lo, hi = percentile_interval(replicates, confidence)
        low, high = float(lo), float(hi)
        finite = replicates[~np.isnan(replicates)]
        se = float(finite.std(ddof=1)) if finite.size > 1 else float("nan")
    label = f"percentile bootstrap ({method}), {n_boot} replicates, {confidence:.0%}, seed {seed}"
    return BootstrapResult(
        estimate=float(estimate),
        low=low,
        high=high,
        se=se,
        n_units=int(n_units),
        n_boot=int(n_boot),
        confidence=float(confidence),
        seed=int(seed),
        method=label,
        replicates=replicates if keep else None,
    )


def _finite(values: npt.ArrayLike) -> FloatArray:
    arr = np.asarray(values, dtype=np.float64).ravel()
    return arr[~np.isnan(arr)]


def _block_plan(n_boot: int, seed: int | np.random.SeedSequence) -> list[tuple[int, int, np.random.Generator]]:
    """(start, stop, generator) per block of :data:`BLOCK_SIZE` replicates."""
    n_blocks = math.ceil(n_boot / BLOCK_SIZE)
    if isinstance(seed, np.random.SeedSequence):
        generators = [np.random.Generator(np.random.PCG64(child)) for child in seed.spawn(n_blocks)]
    else:  # the same generators as SeedSequence(seed).spawn(n_blocks), made faster (:mod:`.streams`)
        generators = spawned_generators(int(seed), n_blocks)
    return [(i * BLOCK_SIZE, min(n_boot, (i + 1) * BLOCK_SIZE), rng) for i, rng in enumerate(generators)]


def _run_blocks(
    plan: list[tuple[int, int, np.random.Generator]],
    work: Callable[[int, int, np.random.Generator], None],
    workers: int,
) -> None:
    if workers <= 1 or len(plan) <= 1:
        for start, stop, rng in plan:
            work(start, stop, rng)
        return
    with ThreadPoolExecutor(max_workers=int(workers)) as pool:
        list(pool.map(lambda block: work(*block), plan))


def _sums_by_index(
    rng: np.random.Generator, pool: FloatArray, draws: npt.NDArray[np.int64], max_elements: int
) -> FloatArray:
    """Sum of ``draws[r]`` uniform draws (with replacement) from ``pool`` for each replicate r."""
    out = np.zeros(draws.size, dtype=np.float64)
    if pool.size == 0:
        return out
    equal = bool(np.all(draws == draws[0]))
    r = 0
    while r < draws.size:
        if equal:
            rows = max(1, min(draws.size - r, max_elements // max(int(draws[0]), 1)))
            stop = r + rows
            idx = rng.integers(0, pool.size, size=(rows, int(draws[0])), dtype=np.int64)
            out[r:stop] = pool[idx].sum(axis=1)
        else:
            csum = np.cumsum(draws[r:])
            stop = r + max(1, int(np.searchsorted(csum, max_elements, side="right")))
            counts = draws[r:stop]
            idx = rng.integers(0, pool.size, size=int(counts.sum()), dtype=np.int64)
            gathered = pool[idx]
            nonzero = counts > 0
            if nonzero.any():
                starts = (np.cumsum(counts) - counts)[nonzero]
                out[r:stop][nonzero] = np.add.reduceat(gathered, starts)
        r = stop
    return out


def pair_replicate_means(
    values: npt.ArrayLike,
    *,
    n_boot: int = 2000,
    seed: int | np.random.SeedSequence = 0,
    max_elements: int = DEFAULT_MAX_ELEMENTS,
    workers: int = 1,
    tie_threshold: int = DEFAULT_TIE_THRESHOLD,
    resolution: float | None = None,
) -> FloatArray:
    """Bootstrap replicates of the mean, resampling the (non-NaN) values with replacement.

    The engine behind :func:`bootstrap_mean`; see the module docstring for streams, memory, the
    exact tie shortcut (``tie_threshold=0`` disables it) and ``resolution``.
    """
    data = _finite(values)
    if resolution is not None:
        if not resolution > 0:
            raise ValueError(f"resolution must be positive, got {resolution!r}")
        data = np.round(data / resolution) * resolution
    n = data.size
    out = np.full(int(n_boot), np.nan)
    if n == 0:
        return out
    uniq, inverse, counts = np.unique(data, return_inverse=True, return_counts=True)
    heavy = counts >= tie_threshold if tie_threshold > 0 else np.zeros(uniq.size, dtype=bool)
    heavy_values = uniq[heavy]
    rest = data[~heavy[inverse]]
    probs = np.append(counts[heavy], rest.size).astype(np.float64) / n
    budget = max(1, int(max_elements))

    def work(start: int, stop: int, rng: np.random.Generator) -> None:
        size = stop - start
        if heavy_values.size:
            multi = rng.multinomial(n, probs, size=size)
            heavy_sum = multi[:, :-1] @ heavy_values
            draws = multi[:, -1].astype(np.int64)
        else:
            heavy_sum = np.zeros(size)
            draws = np.full(size, n, dtype=np.int64)
        out[start:stop] = (heavy_sum + _sums_by_index(rng, rest, draws, budget)) / n

    _run_blocks(_block_plan(int(n_boot), seed), work, workers)
    return out


def bootstrap_mean(
    values: npt.ArrayLike,
    *,
    n_boot: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
    max_elements: int = DEFAULT_MAX_ELEMENTS,
    workers: int = 1,
    tie_threshold: int = DEFAULT_TIE_THRESHOLD,
    resolution: float | None = None,
    return_replicates: bool = False,
) -> BootstrapResult:
    """Mean with a percentile bootstrap CI resampling units (pairs) — paper §4.2 Mean Δ%.

    NaN values are dropped first. ``resolution`` (default ``None`` = exact) rounds the values to
    multiples of ``resolution`` before resampling only; the point estimate is never rounded. Every
    replicate, hence each CI endpoint, then moves by at most ``resolution / 2`` (e.g. 0.005 pp for
    ``resolution=0.01`` on Δ%), and distinct values collapse into ties that the exact multinomial
    shortcut resamples ~5× faster. Other decisions: see the module docstring.
    """
    _check(n_boot, confidence)
    data = _finite(values)
    reps = pair_replicate_means(
        data,
        n_boot=n_boot,
        seed=seed,
        max_elements=max_elements,
        workers=workers,
        tie_threshold=tie_threshold,
        resolution=resolution,
    )
    estimate = float(data.mean()) if data.size else float("nan")
    rounded = f", values rounded to {resolution:g}" if resolution is not None else ""
    return _result(
        estimate,
        reps,
        n_units=data.size,
        n_boot=n_boot,
        confidence=confidence,
        seed=seed,
        method=f"resampling pairs{rounded}",
        keep=return_replicates,
    )


def bootstrap_violation_rate(
    gaps: npt.ArrayLike,
    tau: float = 10.0,
    *,
    n_boot: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
    return_replicates: bool = False,
) -> BootstrapResult:
    """Violation@τ (% of pairs with Δ% > τ, strict) with a pair-resampling bootstrap CI (§4.2).

    Exact and O(n_boot): in a resample of n pairs the violation count is Binomial(n, k/n).
    """
    _check(n_boot, confidence)
    data = _finite(gaps)
    n = data.size
    k = int(np.count_nonzero(data > tau))
    if n == 0:
        reps = np.full(int(n_boot), np.nan)
        estimate = float("nan")
    else:
        rng = np.random.default_rng(seed)
        reps = rng.binomial(n, k / n, size=int(n_boot)).astype(np.float64) * 100.0 / n
        estimate = k * 100.0 / n
    return _result(
        estimate,
        reps,
        n_units=n,
        n_boot=n_boot,
        confidence=confidence,
        seed=seed,
        method=f"resampling pairs, Δ% > {tau:g}",
        keep=return_replicates,
    )


def bootstrap_mean_difference(
    x: npt.ArrayLike,
    y: npt.ArrayLike,
    *,
    paired: bool = False,
    n_boot: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
    max_elements: int = DEFAULT_MAX_ELEMENTS,
    workers: int = 1,
    return_replicates: bool = False,
) -> BootstrapResult:
    """mean(x) − mean(y) with a percentile bootstrap CI (paper §6 language shift, App. E ablation).

    ``paired=False``: x and y are resampled independently (two child streams of ``seed``); NaNs are
    dropped from each. ``paired=True``: x[i] and y[i] are one unit (e.g. the same identifier pair in
    the same slot under the standard and the fairness prompt); units with a NaN on either side are
    dropped and the differences d = x − y are resampled (mean(x*) − mean(y*) = mean(d*)).
    ``n_units`` is the number of matched units (paired) or of values in both arms (independent).
    """
    _check(n_boot, confidence)
    xa = np.asarray(x, dtype=np.float64).ravel()
    ya = np.asarray(y, dtype=np.float64).ravel()
    if paired:
        if xa.size != ya.size:
            raise ValueError("bootstrap_mean_difference(paired=True): x and y must have the same length")
        ok = ~(np.isnan(xa) | np.isnan(ya))
        d = xa[ok] - ya[ok]
        reps = pair_replicate_means(d, n_boot=n_boot, seed=seed, max_elements=max_elements, workers=workers)
        estimate = float(d.mean()) if d.size else float("nan")
        return _result(
            estimate,
            reps,
            n_units=d.size,
            n_boot=n_boot,
            confidence=confidence,
            seed=seed,
            method="paired, resampling matched units",
            keep=return_replicates,
        )
    xs, ys = _finite(xa), _finite(ya)
    sx, sy = np.random.SeedSequence(int(seed)).spawn(2)
    common = {"n_boot": n_boot, "max_elements": max_elements, "workers": workers}
    reps = pair_replicate_means(xs, seed=sx, **common) - pair_replicate_means(ys, seed=sy, **common)
    estimate = float(xs.mean() - ys.mean()) if xs.size and ys.size else float("nan")
    return _result(
        estimate,
        reps,
        n_units=xs.size + ys.size,
        n_boot=n_boot,
        confidence=confidence,
        seed=seed,
        method="independent, resampling pairs in each arm",
        keep=return_replicates,
    )
