"""Batched slot inference for the generic outcome tables (:mod:`.outcome_tables`). Pure.

The tables compute thousands of small comparisons; done one at a time, each pays the fixed costs of a
bootstrap, of a few scipy calls and of a swap test's matrix product. These helpers give the same numbers,
to the last bit, in fewer and larger steps:

- :func:`slot_bootstraps`: several statistics of one comparison from one draw of bootstrap weights
  (:func:`counterbench.stats.cluster_bootstrap.cluster_replicate_totals`; the same streams as a
  :func:`~counterbench.stats.cluster_bootstrap.cluster_bootstrap` per statistic);
- :func:`shared_totals`: the replicate totals of every comparison over the same slots from one draw of
  bootstrap weights (one weight matrix per cluster layout: the slots of one cell and facet); a comparison
  that leaves some of those slots out has zero rows there, so its replicates resample the whole layout
  and use its own slots (to first order the same variance as resampling its own slots alone: the
  weights' covariance −1/n exactly offsets their smaller variance, 1 − 1/n);
- :class:`SlotIntervals`: the slot intervals and t-test p-values of every row of a table in one call;
- :func:`swap_tested`: every swap test of a table in one :meth:`SwapTest.pvalues` (one product per
  number of slots).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from counterbench.stats.cluster_bootstrap import cluster_bootstrap, cluster_replicate_totals
from counterbench.stats.inference import MIN_SLOTS, both_tests_pvalue, slot_design, slot_interval, slot_t_pvalue
from counterbench.stats.swap_test import SwapTest

__all__ = ["SlotIntervals", "shared_totals", "slot_bootstraps", "swap_tested"]


def shared_totals(blocks: Sequence[np.ndarray], n_boot: int, seed: int) -> list[np.ndarray | None]:
    """The (n_boot × columns) replicate totals of each of ``blocks`` (sufficient statistics over the same
    slots, rows in the same order; zero rows where a comparison has no answers) from one draw of bootstrap
    weights seeded by ``seed``: one :func:`~counterbench.stats.cluster_bootstrap.cluster_replicate_totals`
    of the blocks side by side. ``None`` each without replicates (``n_boot`` ≤ 0) or blocks."""
    if n_boot <= 0 or not blocks:
        return [None] * len(blocks)
    totals = cluster_replicate_totals(np.hstack(blocks), n_boot, seed)
    return list(np.split(totals, np.cumsum([b.shape[1] for b in blocks])[:-1], axis=1))


def slot_bootstraps(suff: np.ndarray, statistics: Sequence[Any], n_boot: int, seed: int, confidence: float,
                    *, percentile: bool = True, totals: np.ndarray | None = None
                    ) -> list[tuple[float, float, float, np.ndarray | None]]:
    """(estimate, percentile low, percentile high, replicates) of a slot-cluster bootstrap of each
    statistic of the slots' sufficient statistics ``suff``, all from the same replicate totals (same
    slots, same seed: one draw of the weights, as
    :func:`~counterbench.stats.cluster_bootstrap.cluster_bootstrap` would make for each).

    ``percentile=False``: the caller uses the estimate and the replicates only (a slot interval is made
    from them, :class:`SlotIntervals`): low and high are NaN and not computed; the estimate and the
    replicates are the ones :func:`~counterbench.stats.cluster_bootstrap.cluster_bootstrap` gives.
    ``totals``: the replicate totals already drawn for these slots (:func:`shared_totals`; ``seed`` is then
    only named in the interval's label)."""
    if n_boot <= 0:
        out: list[tuple[float, float, float, np.ndarray | None]] = []
        for statistic in statistics:
            with np.errstate(divide="ignore", invalid="ignore"):
                est = float(np.asarray(statistic(suff.sum(axis=0)[None, :]))[0])
            out.append((est, float("nan"), float("nan"), None))
        return out
    if totals is None:
        totals = cluster_replicate_totals(suff, n_boot, seed)
    if not percentile:
        return [_estimate_and_replicates(suff, statistic, totals, n_boot) for statistic in statistics]
    results: list[tuple[float, float, float, np.ndarray | None]] = []
    for statistic in statistics:
        res = cluster_bootstrap(suff, statistic, n_boot=n_boot, seed=seed, confidence=confidence,
                                return_replicates=True, totals=totals)
        results.append((res.estimate, res.low, res.high, res.replicates))
    return results


def _estimate_and_replicates(suff: np.ndarray, statistic: Any, totals: np.ndarray, n_boot: int
                             ) -> tuple[float, float, float, np.ndarray]:
    """What :func:`~counterbench.stats.cluster_bootstrap.cluster_bootstrap` computes for the estimate and
    the replicates (the same operations), without its percentile interval and standard error."""
    suff = np.asarray(suff, dtype=np.float64)
    suff = suff[:, None] if suff.ndim == 1 else suff
    reps = np.full(int(n_boot), np.nan)
    estimate = float("nan")
    if suff.shape[0]:
        with np.errstate(divide="ignore", invalid="ignore"):
            reps[:] = statistic(totals)
            estimate = float(np.asarray(statistic(suff.sum(axis=0)[None, :]), dtype=np.float64)[0])
    return estimate, float("nan"), float("nan"), reps


class SlotIntervals:
    """The slot intervals of many rows, computed together at the end (one vectorised call instead of a
    few scipy calls per row): :meth:`add` notes a row's estimate, replicates and slot weights and the
    columns to fill; :meth:`fill` writes (low, high[, t-test p]) — the small-sample variance factor and
    degrees of freedom of a slot mean whose slots weigh ``weights`` (see the module notes); NaN without
    replicates or a finite estimate."""

    def __init__(self, confidence: float) -> None:
        self.confidence = confidence
        self._items: list[tuple[dict[str, Any], tuple[str, ...], float, np.ndarray, np.ndarray]] = []

    def add(self, row: dict[str, Any], columns: tuple[str, ...], estimate: float, reps: np.ndarray | None,
            weights: np.ndarray) -> None:
        for column in columns:
            row[column] = float("nan")
        if reps is not None and np.isfinite(estimate):
            self._items.append((row, columns, estimate, reps, weights))

    def fill(self) -> None:
        if not self._items:
            return
        designs = [slot_design(weights) for *_, weights in self._items]
        factor = np.array([d[0] for d in designs])
        df = np.array([d[1] for d in designs])
        est = np.array([item[2] for item in self._items])
        reps = np.vstack([item[3] for item in self._items])
        n_slots = np.array([item[4].size for item in self._items])
        low, high = slot_interval(est, reps, n_slots, confidence=self.confidence, factor=factor, df=df)
        p = slot_t_pvalue(est, reps, n_slots, factor=factor, df=df)
        for i, (row, columns, *_) in enumerate(self._items):
            for column, value in zip(columns, (low[i], high[i], p[i]), strict=False):
                row[column] = float(value)
        self._items.clear()


def swap_tested(swaps: SwapTest, pending: list[tuple[dict[str, Any], np.ndarray, list[int], Any]]) -> None:
    """Set each pending row's ``p_value`` (see the module notes): the larger of the swap test's (columns
    ``order`` exchanged slot by slot) and the interval's t-test's (the row's ``_p_t``, which is removed);
    NaN below ``MIN_SLOTS`` slots. The swap tests of one table run together (:meth:`SwapTest.pvalues`:
    one product per number of slots)."""
    tests = [(row, s, order, statistic) for row, s, order, statistic in pending if len(s) >= MIN_SLOTS]
    swap_ps = swaps.pvalues([(s, s[:, order], statistic) for _, s, order, statistic in tests])
    for row, *_ in pending:
        row["p_value"] = float("nan")
    for (row, *_), swap_p in zip(tests, swap_ps, strict=True):
        row["p_value"] = both_tests_pvalue(swap_p, row["_p_t"])
    for row, *_ in pending:
        row.pop("_p_t", None)
