"""Pooling slot-bootstrap replicates across use cases and languages: the ``cpg`` marks, the
``cpg_overall`` table and the identifier-deviation interval (spec §3 amendments; issue "every star
earned").

Decisions:

- **CPG marks** (``cpg``): p from the swap test of the two identities slot by slot
  (:mod:`counterbench.stats.swap_test`: exact under "the identity changes nothing", whatever the
  answers' law), a row is ``testable`` with at least :data:`~counterbench.stats.inference.MIN_SLOTS`
  matched slots, ``significant`` when its Benjamini–Hochberg q ≤ 0.05 within the model's testable
  rows of the table (the family: one model's use cases × languages × canonical pairs) *and* its 95%
  slot interval excludes 0 — a star never sits on an interval that contains 0.
- **``cpg_overall``** per model × language × canonical pair: the mean over use cases (equal weights)
  of each use case's mean *per-slot* signed relative gap (r − c)/((r + c)/2) × 100 over its matched
  slots. Per-slot gaps, not gaps of sums: every matched prompt counts the same whatever its answer
  level (in the quick preset the strongest profile's salary would otherwise outweigh the weakest's
  four to one), and each use case's unit (rupees, percent) cancels. Replicates: the mean of the
  use cases' replicates (each use case's slots are resampled independently: a stratified slot
  bootstrap); interval with the variance factor and Bell–McCaffrey degrees of freedom of that
  stratified mean (:func:`counterbench.stats.inference.slot_design`: a slot of a use case with few
  slots weighs more, so df is below slots − use cases — 70 rather than 220 on full English); sign consistency
  over every matched slot. A use case with a single matched slot is left out (a resample of one slot
  has no spread, which would make the interval too narrow). p: the swap test of the per-slot gaps
  (a swap flips a slot's gap). This is the figure the headline finding
  reads (on the quick preset: 30 slots, where a single use case has 6). Family for the marks:
  one model's rows.
- **Identifier deviation interval**: in every replicate, the slot-adjusted identifier means of each
  cell give the deviations (m_i − G)/|G| × 100; they are averaged over the cells (use cases ×
  languages) like the point estimate, and the interval is corrected with the slots of all cells.
  Descriptive: no mark.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from counterbench.stats.arrays import FloatArray
from counterbench.stats.inference import (
    both_tests_pvalue,
    earned_marks,
    slot_design,
    slot_interval,
    slot_t_pvalue,
)
from counterbench.stats.swap_test import SwapTest

__all__ = ["DeviationSlice", "cpg_tables", "mark_rows", "with_deviation_intervals"]



def mark_rows(frame: pd.DataFrame, p_col: str = "p_value") -> pd.DataFrame:
    """Add ``testable`` (≥ MIN_SLOTS slots), ``q_value`` and ``significant``: BH q ≤ 0.05 within each
    model and the 95% interval (``ci_low``/``ci_high``) excludes 0 (:func:`earned_marks`)."""
    return earned_marks(frame, p_col=p_col)


def _overall(rows: list[dict[str, Any]], confidence: float, swaps: SwapTest) -> pd.DataFrame:
    if not rows:
        return pd.DataFrame()
    frame = pd.DataFrame.from_records(rows)
    records: list[dict[str, Any]] = []
    contributions: list[FloatArray] = []  # per record, what each matched slot adds to its estimate
    for key, part in frame.groupby(["model", "language", "axis", "reference", "comparison"], sort=False):
        part = part[part["_slot_n"] >= 2]  # a use case with one matched slot says nothing about the spread
        if part.empty:
            continue
        gap = float(part["_slot_gap"].mean())
        n = int(part["_slot_n"].sum())
        above, below = int(part["_above"].sum()), int(part["_below"].sum())
        reps_list = [r for r in part["_slot_reps"] if r is not None]
        low = high = p_t = np.nan
        if len(reps_list) == len(part):
            reps = np.mean(np.vstack(reps_list), axis=0)[None, :]
            sizes = part["_slot_n"].to_numpy(np.int64)  # equal use-case weights, equal slots within
            factor, df = slot_design(np.ones(int(sizes.sum())), np.repeat(np.arange(sizes.size), sizes))
            lo, hi = slot_interval(gap, reps, n, len(part), confidence, factor=factor, df=df)
            low, high = float(lo[0]), float(hi[0])
            p_t = float(slot_t_pvalue(gap, reps, n, len(part), factor=factor, df=df)[0])
        # the estimate is Σ_u mean(g_u) / U: each matched slot adds g / (U n_u), and a swap flips g's sign
        contributions.append(np.concatenate([np.asarray(g, dtype=np.float64) / (len(part) * len(g))
                                             for g in part["_slot_gaps"]]))
        model, language, axis, reference, comparison = key
        records.append({"model": model, "language": language, "axis": axis, "reference": reference,
                        "comparison": comparison, "gap": gap, "ci_low": low, "ci_high": high,
                        "sign_consistency": above * 100.0 / n if n else np.nan, "n_slots": n,
                        "n_use_cases": len(part), "p_value": p_t,
                        "n_agree": above if gap > 0 else below if gap < 0 else 0})
    for record, p_swap in zip(records, swaps.pvalues_of_sums(contributions), strict=True):  # one batch
        record["p_value"] = both_tests_pvalue(p_swap, record["p_value"])
    return mark_rows(pd.DataFrame.from_records(records))


def cpg_tables(rows: list[dict[str, Any]], confidence: float, swaps: SwapTest) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``cpg`` (marked) and ``cpg_overall`` from the per-cell rows (which carry ``_reps``/``_above``);
    ``swaps``: the swap test behind ``cpg_overall``'s p."""
    overall = _overall(rows, confidence, swaps)
    cpg = pd.DataFrame.from_records(rows)
    if not cpg.empty:
        cpg["n_agree"] = cpg["_above"].where(cpg["gap"] > 0, cpg["_below"].where(cpg["gap"] < 0, 0))
        cpg = mark_rows(cpg.drop(columns=["_reps", "_above", "_below", "_slot_gap", "_slot_reps",
                                          "_slot_n", "_slot_gaps"]))
    return cpg, overall


@dataclass(frozen=True)
class DeviationSlice:
    """One cell's replicate slot-adjusted identifier means (replicates × identifiers)."""

    key: dict[str, str]
    names: Sequence[str]
    means: FloatArray
    n_slots: int


def with_deviation_intervals(deviation: pd.DataFrame, slices: list[DeviationSlice],
                             confidence: float) -> pd.DataFrame:
    """``deviation`` with ``ci_low``/``ci_high`` from the cells' replicates (see the module docstring)."""
    out = deviation.reset_index(drop=True)
    out["ci_low"] = np.nan
    out["ci_high"] = np.nan
    if not slices or out.empty:
        return out
    by_axis: dict[tuple[str, str], list[DeviationSlice]] = {}
    for sl in slices:
        by_axis.setdefault((sl.key["model"], sl.key["axis"]), []).append(sl)
    lookup = {(str(m), str(a), str(i)): n for n, (m, a, i) in
              enumerate(zip(out["model"], out["axis"], out["identifier"], strict=True))}
    for (model, axis), group in by_axis.items():
        names = list(dict.fromkeys(n for sl in group for n in sl.names))
        reps = group[0].means.shape[0]
        stack = np.full((len(group), reps, len(names)), np.nan)
        for s, sl in enumerate(group):
            with warnings.catch_warnings():  # a replicate that drew no slot with an answer: NaN
                warnings.simplefilter("ignore", RuntimeWarning)
                level = np.nanmean(sl.means, axis=1, keepdims=True)
            with np.errstate(divide="ignore", invalid="ignore"):
                dev = (sl.means - level) / np.abs(level) * 100.0
            stack[s][:, [names.index(n) for n in sl.names]] = dev
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            mean_reps = np.nanmean(stack, axis=0)  # replicates × identifiers
        n_slots = sum(sl.n_slots for sl in group)
        rows = [lookup.get((str(model), str(axis), str(name))) for name in names]
        point = np.array([out.at[r, "deviation"] if r is not None else np.nan for r in rows], dtype=np.float64)
        low, high = slot_interval(point, mean_reps.T, n_slots, len(group), confidence)
        for k, row in enumerate(rows):
            if row is not None:
                out.loc[row, "ci_low"], out.loc[row, "ci_high"] = low[k], high[k]
    return out
