"""Cluster (slot) bootstrap over additive per-slot sufficient statistics.

The pairs of one slot share their outputs and are not independent, so the spec reports a cluster
bootstrap over slots next to the paper's pair bootstrap. Each replicate draws as many slots as
there are, with replacement, totals their sufficient statistics (W @ S, W the replicate × slot
multiplicities) and applies a vectorised statistic — cheap even for millions of pairs, since only
per-slot sums and counts enter.

Decisions:

- Streams, blocks, memory budget and percentile intervals as in :mod:`counterbench.stats.bootstrap`.
- Slots (clusters) without any defined value are not resampled.
- Mean-type statistics are ratio estimators Σ sums / Σ counts (pairs weighted equally, as in the
  point estimate).
- Differences between two arms (languages, prompt variants) resample shared cluster labels
  jointly (paired by slot).
- Units nested in larger clusters (rows that are near-duplicates of each other): :func:`cluster_totals`
  adds up the units' rows per cluster, and :func:`cluster_ratio_replicates` resamples those clusters
  for several ratio statistics (columns) at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from counterbench.stats.bootstrap import (
    BLOCK_SIZE,
    DEFAULT_MAX_ELEMENTS,
    BootstrapResult,
    FloatArray,
    _block_plan,
    _check,
    _result,
    _run_blocks,
)

__all__ = [
    "cluster_bootstrap",
    "cluster_bootstrap_mean",
    "cluster_bootstrap_mean_difference",
    "cluster_bootstrap_violation_rate",
    "cluster_ratio_replicates",
    "cluster_replicate_totals",
    "cluster_totals",
    "cluster_weights",
]


def cluster_weights(rng: np.random.Generator, n_clusters: int, rows: int) -> npt.NDArray[np.float64]:
    """Bootstrap multiplicities (rows × n_clusters): how often each cluster is drawn per replicate.

    Draws ``n_clusters`` cluster indices with replacement per row, then counts them.
    """
    idx = rng.integers(0, n_clusters, size=(rows, n_clusters), dtype=np.int64)
    flat = idx + (np.arange(rows, dtype=np.int64) * n_clusters)[:, None]
    return np.bincount(flat.ravel(), minlength=rows * n_clusters).reshape(rows, n_clusters).astype(np.float64)


def cluster_totals(rows: npt.ArrayLike, clusters: npt.ArrayLike | pd.Series) -> FloatArray:
    """Per-unit rows (units × m, additive statistics) summed within their clusters: (n_clusters × m),
    clusters in order of first appearance. A unit's cluster is its label in ``clusters``."""
    data = np.asarray(rows, dtype=np.float64)
    matrix = data.reshape(len(data), -1)
    codes = _cluster_codes(clusters)
    if codes.size != matrix.shape[0]:
        raise ValueError("cluster_totals: one cluster label per row")
    n = int(codes.max()) + 1 if codes.size else 0
    out = np.zeros((n, matrix.shape[1]))
    np.add.at(out, codes, matrix)
    return out.reshape((n, *data.shape[1:])) if data.ndim > 1 else out[:, 0]


def cluster_ratio_replicates(sums: npt.ArrayLike, counts: npt.ArrayLike, n_boot: int, rng: np.random.Generator, *,
                             block: int = 1000) -> FloatArray:
    """Bootstrap replicates (n_boot × m) of Σ sums / Σ counts per column, clusters (rows of the
    n_clusters × m ``sums`` and ``counts``) resampled with replacement; ``block`` replicates at a time
    bound the memory (block × n_clusters weights). A column with no count in a replicate is NaN."""
    s = np.asarray(sums, dtype=np.float64)
    c = np.asarray(counts, dtype=np.float64)
    parts = []
    done = 0
    whole = s.ndim == 2 and s.shape == c.shape and _exact_in_any_order(s, c)
    both = np.hstack([s, c]) if whole else s
    while done < n_boot:
        rows = min(block, n_boot - done)
        w = cluster_weights(rng, s.shape[0], rows)
        if whole:  # whole numbers: one product of sums and counts side by side, the same numbers exactly
            totals = w @ both
            width = totals.shape[1] // 2
            with np.errstate(invalid="ignore", divide="ignore"):
                ratio = totals[:, :width] / totals[:, width:]
            parts.append(ratio)
            done += rows
            continue
        for r in range(0, rows, BLOCK_SIZE):  # block-sized products: a large one pays BLAS's thread hand-off
            with np.errstate(invalid="ignore", divide="ignore"):
                parts.append((w[r : r + BLOCK_SIZE] @ s) / (w[r : r + BLOCK_SIZE] @ c))
        done += rows
    return np.vstack(parts) if parts else np.empty((0, s.shape[1] if s.ndim > 1 else 1))


def _exact_in_any_order(*matrices: FloatArray) -> bool:
    """True when every product of bootstrap weights (whole numbers, summing to the number of rows) with
    these matrices is exact in floating point whatever the order of summation: all entries are whole
    numbers and every possible total stays below 2**53 (so blocking a product differently cannot change
    a bit)."""
    for m in matrices:
        if m.size == 0 or not np.isfinite(m).all() or not np.array_equal(m, np.round(m)):
            return False
        if float(np.abs(m).max()) * max(1, m.shape[0]) >= 2.0**52:
            return False
    return True


def cluster_replicate_totals(sufficient: npt.ArrayLike, n_boot: int, seed: int | np.random.SeedSequence, *,
                             max_elements: int = DEFAULT_MAX_ELEMENTS) -> FloatArray:
    """The (n_boot × m) replicate totals ``W @ sufficient`` of :func:`cluster_bootstrap`, the same streams
    (one generator per block of :data:`~counterbench.stats.bootstrap.BLOCK_SIZE` replicates) and the same
    products (one per block). Several statistics of the same slots and seed can share them.

    A block's weights are counted and multiplied while they are small (block × clusters): counting all
    blocks' draws at once made several arrays of n_boot × clusters per call, and allocating (and
    faulting in) those cost more than the counting. With more clusters than ``max_elements`` allows a
    block, blocks are drawn in parts and counted together, as many as the budget allows."""
    suff = np.asarray(sufficient, dtype=np.float64)
    if suff.ndim == 1:
        suff = suff[:, None]
    n_clusters = suff.shape[0]
    out = np.full((int(n_boot), suff.shape[1]), np.nan)
    if n_clusters == 0:
        return out
    plan = _block_plan(int(n_boot), seed)
    budget = max(1, int(max_elements) // n_clusters)
    if budget >= BLOCK_SIZE:  # every block fits the budget: counted and multiplied block by block
        offsets = (np.arange(BLOCK_SIZE, dtype=np.int64) * n_clusters)[:, None]
        for start, stop, rng in plan:
            size = stop - start
            idx = rng.integers(0, n_clusters, size=(size, n_clusters), dtype=np.int64)
            idx += offsets[:size]
            weights = np.bincount(idx.ravel(), minlength=size * n_clusters).reshape(size, n_clusters)
            out[start:stop] = weights.astype(np.float64) @ suff
        return out
    i = 0
    while i < len(plan):
        start, rows = plan[i][0], 0
        draws: list[npt.NDArray[np.int64]] = []
        while i < len(plan) and (not draws or rows + plan[i][1] - plan[i][0] <= budget):
            b_start, b_stop, rng = plan[i]
            size = b_stop - b_start
            if size > budget:  # one block above the budget: drawn in parts, as cluster_weights would
                for r in range(0, size, budget):
                    draws.append(rng.integers(0, n_clusters, size=(min(budget, size - r), n_clusters),
                                              dtype=np.int64))
            else:
                draws.append(rng.integers(0, n_clusters, size=(size, n_clusters), dtype=np.int64))
            rows += size
            i += 1
        idx = np.vstack(draws)
        flat = idx + (np.arange(rows, dtype=np.int64) * n_clusters)[:, None]
        weights = np.bincount(flat.ravel(), minlength=rows * n_clusters).reshape(rows, n_clusters).astype(np.float64)
        for r in range(0, rows, BLOCK_SIZE):  # products of a block's size: a large one pays BLAS's thread hand-off
            out[start + r : start + min(rows, r + BLOCK_SIZE)] = weights[r : r + BLOCK_SIZE] @ suff
    return out


def cluster_bootstrap(
    sufficient: npt.ArrayLike,
    statistic: Callable[[FloatArray], FloatArray],
    *,
    n_boot: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
    max_elements: int = DEFAULT_MAX_ELEMENTS,
    workers: int = 1,
    method: str = "resampling slots",
    return_replicates: bool = False,
    totals: FloatArray | None = None,
) -> BootstrapResult:
    """Generic cluster bootstrap over additive per-cluster sufficient statistics.

    ``sufficient`` is (n_clusters × m): one row of additive statistics per cluster (e.g. sums and
    counts). Each replicate resamples clusters with replacement, totals their rows (W @ sufficient)
    and applies ``statistic`` — a vectorised function mapping (r × m) totals to r values. The point
    estimate is ``statistic`` of the column totals. Used for Mean Δ% over slots, CPG and MOG.
    ``totals``: the replicate totals, when :func:`cluster_replicate_totals` already made them for
    these clusters, ``n_boot`` and ``seed`` (another statistic of the same draw).
    """
    _check(n_boot, confidence)
    suff = np.asarray(sufficient, dtype=np.float64)
    if suff.ndim == 1:
        suff = suff[:, None]
    n_clusters = suff.shape[0]
    seed_int = int(seed)
    out = np.full(int(n_boot), np.nan)
    estimate = float("nan")  # and NaN replicates when there is no cluster
    if n_clusters:
        if totals is not None or workers <= 1:
            if totals is None:
                totals = cluster_replicate_totals(suff, int(n_boot), seed, max_elements=max_elements)
            with np.errstate(divide="ignore", invalid="ignore"):
                out[:] = statistic(totals)
        else:
            budget = max(1, int(max_elements) // n_clusters)

            def work(start: int, stop: int, rng: np.random.Generator) -> None:
                for r in range(start, stop, budget):
                    rows = min(budget, stop - r)
                    totals = cluster_weights(rng, n_clusters, rows) @ suff
                    with np.errstate(divide="ignore", invalid="ignore"):
                        out[r : r + rows] = statistic(totals)

            _run_blocks(_block_plan(int(n_boot), seed), work, workers)
        with np.errstate(divide="ignore", invalid="ignore"):
            estimate = float(np.asarray(statistic(suff.sum(axis=0)[None, :]), dtype=np.float64)[0])
    return _result(
        estimate,
        out,
        n_units=n_clusters,
        n_boot=n_boot,
        confidence=confidence,
        seed=seed_int,
        method=method,
        keep=return_replicates,
    )


def _ratio(totals: FloatArray) -> FloatArray:
    return np.asarray(totals[:, 0] / totals[:, 1], dtype=np.float64)


def _cluster_codes(clusters: npt.ArrayLike | pd.Series) -> npt.NDArray[np.int64]:
    series = clusters if isinstance(clusters, pd.Series) else pd.Series(np.asarray(clusters).ravel())
    codes, _ = pd.factorize(series, sort=False, use_na_sentinel=False)
    return codes.astype(np.int64)


def _sum_count(values: FloatArray, codes: npt.NDArray[np.int64], n: int, tau: float | None) -> FloatArray:
    ok = ~np.isnan(values)
    weights = values[ok] if tau is None else (values[ok] > tau).astype(np.float64)
    sums = np.bincount(codes[ok], weights=weights, minlength=n)
    counts = np.bincount(codes[ok], minlength=n).astype(np.float64)
    return np.column_stack([sums, counts])


def cluster_bootstrap_mean(
    values: npt.ArrayLike,
    clusters: npt.ArrayLike,
    *,
    tau: float | None = None,
    n_boot: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
    max_elements: int = DEFAULT_MAX_ELEMENTS,
    return_replicates: bool = False,
) -> BootstrapResult:
    """Mean (or, with ``tau``, Violation@τ in %) with a cluster bootstrap CI resampling slots (spec §3).

    ``clusters`` labels each value's slot (e.g. ``PairGaps.slot``). Replicate = Σ sums / Σ counts over
    resampled slots. NaN values are dropped; slots with no defined value are not resampled.
    """
    data = np.asarray(values, dtype=np.float64).ravel()
    codes = _cluster_codes(clusters)
    if codes.size != data.size:
        raise ValueError("cluster_bootstrap_mean: values and clusters must have the same length")
    suff = _sum_count(data, codes, int(codes.max()) + 1 if codes.size else 0, tau)
    suff = suff[suff[:, 1] > 0]
    scale = 1.0 if tau is None else 100.0
    label = "resampling slots" if tau is None else f"resampling slots, Δ% > {tau:g}"
    return cluster_bootstrap(
        suff,
        lambda t: _ratio(t) * scale,
        n_boot=n_boot,
        seed=seed,
        confidence=confidence,
        max_elements=max_elements,
        method=label,
        return_replicates=return_replicates,
    )


def cluster_bootstrap_violation_rate(
    gaps: npt.ArrayLike, clusters: npt.ArrayLike, tau: float = 10.0, **kwargs: Any
) -> BootstrapResult:
    """Violation@τ (%) with a cluster bootstrap over slots; see :func:`cluster_bootstrap_mean`."""
    return cluster_bootstrap_mean(gaps, clusters, tau=tau, **kwargs)


def cluster_bootstrap_mean_difference(
    x: npt.ArrayLike,
    x_clusters: npt.ArrayLike,
    y: npt.ArrayLike,
    y_clusters: npt.ArrayLike,
    *,
    n_boot: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
    max_elements: int = DEFAULT_MAX_ELEMENTS,
    return_replicates: bool = False,
) -> BootstrapResult:
    """mean(x) − mean(y) with a paired cluster bootstrap: shared cluster labels are resampled jointly.

    Use labels that identify the matched unit in both arms (e.g. the slot key without the language
    or prompt-variant column). A cluster present in one arm only is still resampled and contributes
    to that arm only. NaN values are dropped.
    """
    xa = np.asarray(x, dtype=np.float64).ravel()
    ya = np.asarray(y, dtype=np.float64).ravel()
    labels = pd.concat(
        [pd.Series(np.asarray(x_clusters).ravel()), pd.Series(np.asarray(y_clusters).ravel())], ignore_index=True
    )
    if len(labels) != xa.size + ya.size:
        raise ValueError("cluster_bootstrap_mean_difference: each arm needs one cluster label per value")
    codes = _cluster_codes(labels)
    n = int(codes.max()) + 1 if codes.size else 0
    suff = np.hstack([_sum_count(xa, codes[: xa.size], n, None), _sum_count(ya, codes[xa.size :], n, None)])
    suff = suff[(suff[:, 1] > 0) | (suff[:, 3] > 0)]

    def diff(t: FloatArray) -> FloatArray:
        return np.asarray(t[:, 0] / t[:, 1] - t[:, 2] / t[:, 3], dtype=np.float64)

    return cluster_bootstrap(
        suff,
        diff,
        n_boot=n_boot,
        seed=seed,
        confidence=confidence,
        max_elements=max_elements,
        method="paired, resampling slots",
        return_replicates=return_replicates,
    )
