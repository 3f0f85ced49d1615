"""Identifier-level tables: canonical pair gap, maximum observed gap, identifier deviation
(paper §6, App. A.3, C; spec §3). Built on :mod:`counterbench.stats.gaps`,
:mod:`counterbench.stats.identifier_gaps` and the shared slot resamples of
:mod:`counterbench.analyses.slots` (one matrix product per model × language × use case for the CPG
and MOG intervals of all its axes; calling ``stats.cluster_bootstrap`` once per cell, with its
50-replicate blocks, cost ~25 s on the full design).

Decisions:

- Cells are model × language × use case × axis; a slot inside a cell is profile × question variant.
- **Canonical pairs** are data: each study declares them (``canonical_pairs`` in its YAML, reference
  first; see :func:`study_canonical_pairs`); ``analyze(canonical_pairs=...)``
  replaces them. A cell whose axis has no pair, or where either
  identifier never answered, has no CPG row. CPG = (x̄_R − x̄_C)/((x̄_R + x̄_C)/2) × 100 on matched
  slots (both answered), sign consistency = % of those slots with R > C, ties reported apart, CI by
  resampling matched slots — the definitions of
  :func:`~counterbench.stats.identifier_gaps.canonical_pair_gap`, which tests hold it to.
- **MOG, default profile**: identifier means are *slot-adjusted* (see
  :func:`counterbench.analyses.prepare.slot_adjusted`): equal to the plain means when every
  identifier answered every slot, and not pushed up or down by which profiles an identifier happens
  to miss. (Plain means, as in :func:`~counterbench.stats.identifier_gaps.maximum_observed_gap`,
  turned 2% missing answers of a fair simulated model into 45% "gaps".) Top/bottom are the
  identifiers with the highest/lowest adjusted mean. **No interval** (``ci_low``/``ci_high`` NaN):
  the maximum of many noisy gaps is biased upward (+1.9 points on full English, +7.7 on the quick
  preset, with nothing planted) and the slot interval that re-selects the maximum in every replicate
  covered the true maximum in 0 of 300 / 600 simulated cells (``benchmarks/calibration.py``). MOG is
  descriptive; the tested comparisons are the canonical pair gaps.
- **The release profile** reproduces the release: plain identifier means; relative gaps NaN only when the
  two means sum to 0 (negative markups keep a value); MOG's interval is the paired slot bootstrap of
  the fixed observed top/bottom pair; CPG likewise.
- Slot resamples are those of :class:`~counterbench.analyses.slots.SlotResampler` (one stream per
  model × language × use case, shared with the Mean Δ% cluster interval).
- **Identifier deviation**: (m_i − G)/|G| × 100 per cell, G the unweighted mean of the identifier
  means, averaged (unweighted) over use cases and languages (slot-adjusted means by default).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import cast

import numpy as np
import numpy.typing as npt
import pandas as pd

from counterbench.analyses import pooled
from counterbench.analyses.profiles import AnalysisProfile
from counterbench.analyses.resampling import percentiles as percentile_interval
from counterbench.analyses.slots import GROUP_COLUMNS, SlotResampler
from counterbench.stats.arrays import FloatArray
from counterbench.stats.gaps import Nonpositive, relative_gap
from counterbench.stats.identifier_gaps import identifier_deviation
from counterbench.stats.inference import both_tests_pvalue, slot_design, slot_interval, slot_t_pvalue
from counterbench.stats.seeding import stable_seed
from counterbench.stats.swap_test import SwapTest

__all__ = ["identifier_tables", "max_relative_gap", "study_canonical_pairs"]

CELL = ["model", "language", "use_case", "axis"]
SLOT = ["profile_id", "question_variant"]


def study_canonical_pairs(study_names: Iterable[str]) -> dict[str, tuple[str, str]]:
    """Axis -> (reference, comparison) as declared by the registered studies named (the first wins per axis).

    Results whose study is not registered (a study from a YAML file) get none from here: ``counterbench
    audit FILE.yaml`` passes the file's own pairs, the Python API takes ``canonical_pairs=``.
    """
    from counterbench.studies.registry import STUDIES, load_study

    pairs: dict[str, tuple[str, str]] = {}
    for name in dict.fromkeys(str(n) for n in study_names):
        if name in STUDIES:
            for axis, pair in load_study(name).canonical_pairs.items():
                pairs.setdefault(axis, pair)
    return pairs


def max_relative_gap(means: FloatArray) -> tuple[FloatArray, npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Row-wise max over identifier pairs of |m_i − m_j| / ((m_i + m_j)/2) × 100 (pairs with a sum ≤ 0
    or a NaN skipped), with the (higher, lower) column of the maximising pair. (R × k) input."""
    m = np.atleast_2d(np.asarray(means, dtype=np.float64))
    rows, k = m.shape
    gaps = np.full(rows, np.nan)
    hi = np.zeros(rows, dtype=np.int64)
    lo = np.zeros(rows, dtype=np.int64)
    if k < 2:
        return gaps, hi, lo
    finite = np.isfinite(m)
    positive = (finite.sum(axis=1) >= 2) & np.all(~finite | (m > 0), axis=1)
    if positive.any():  # all means > 0: the maximum is the highest vs the lowest mean
        sub = m[positive]
        hi[positive] = np.nanargmax(np.where(np.isfinite(sub), sub, -np.inf), axis=1)
        lo[positive] = np.nanargmin(np.where(np.isfinite(sub), sub, np.inf), axis=1)
        top, bottom = sub[np.arange(sub.shape[0]), hi[positive]], sub[np.arange(sub.shape[0]), lo[positive]]
        gaps[positive] = relative_gap(top, bottom)
    other = np.flatnonzero(~positive & (finite.sum(axis=1) >= 2))
    if other.size:
        iu, ju = np.triu_indices(k, 1)
        pair = relative_gap(m[other][:, iu], m[other][:, ju])
        has = ~np.isnan(pair).all(axis=1)
        best = np.argmax(np.where(np.isnan(pair), -np.inf, pair), axis=1)
        a, b = iu[best], ju[best]
        swap = m[other, b] > m[other, a]
        hi[other], lo[other] = np.where(swap, b, a), np.where(swap, a, b)
        gaps[other] = np.where(has, pair[np.arange(other.size), best], np.nan)
    return gaps, hi, lo


def _adjusted_means(totals: FloatArray, k: int) -> FloatArray:
    """Slot-adjusted identifier means from summed sufficient statistics [E (k), P (k), v̄, 1]."""
    with np.errstate(divide="ignore", invalid="ignore"):
        level = totals[:, 2 * k] / totals[:, 2 * k + 1]
        return np.asarray(level[:, None] + totals[:, :k] / totals[:, k : 2 * k], dtype=np.float64)


def _interval(reps: FloatArray | None, confidence: float, design: tuple[float, float] | None = None,
              estimate: float = np.nan, n_slots: int = 0) -> tuple[float, float]:
    """Percentile interval of ``reps``; with ``design`` (variance factor, df: :func:`slot_design`), the
    slot interval of ``n_slots`` slots around ``estimate`` (:func:`counterbench.stats.inference.slot_interval`:
    none on fewer slots than its calibration supports)."""
    if reps is None:
        return np.nan, np.nan
    if design is not None:
        lo, hi = slot_interval(estimate, reps[None, :], n_slots, 1, confidence, factor=design[0], df=design[1])
        return float(lo[0]), float(hi[0])
    low, high = percentile_interval(reps, confidence)
    return float(low), float(high)


@dataclass
class _Cell:
    """One model × language × use case × axis cell: its slots × identifiers matrix over the
    group's slot universe (NaN where no answer) and the columns it adds to the group's product."""

    key: dict[str, str]
    matrix: FloatArray
    names: list[str]
    cpg: tuple[str, str] | None
    blocks: dict[str, tuple[int, int]]


def _pair_values(cell: _Cell, first: str, second: str) -> tuple[FloatArray, FloatArray]:
    """The two identifiers' values on their matched slots (both answered)."""
    r, c = cell.matrix[:, cell.names.index(first)], cell.matrix[:, cell.names.index(second)]
    matched = ~(np.isnan(r) | np.isnan(c))
    return r[matched], c[matched]


def _cpg_suff(cell: _Cell, first: str, second: str) -> FloatArray:
    """Per universe slot: [r, c] where both answered, else [0, 0]; the gap of the sums is the gap of the
    means (the common count cancels)."""
    r, c = cell.matrix[:, cell.names.index(first)], cell.matrix[:, cell.names.index(second)]
    matched = ~(np.isnan(r) | np.isnan(c))
    return np.column_stack([np.where(matched, r, 0.0), np.where(matched, c, 0.0)])


def _slot_gap_suff(cell: _Cell, first: str, second: str, nonpositive: Nonpositive) -> FloatArray:
    """Per universe slot: [signed relative gap of the two answers, 1] where both answered (and the gap is
    defined), else [0, 0] — the sufficient statistics of the mean per-slot gap (``cpg_overall``)."""
    r, c = cell.matrix[:, cell.names.index(first)], cell.matrix[:, cell.names.index(second)]
    gap = relative_gap(r, c, signed=True, nonpositive=nonpositive)
    ok = ~np.isnan(gap)
    return np.column_stack([np.where(ok, gap, 0.0), ok.astype(np.float64)])


def _mog_suff(cell: _Cell) -> FloatArray:
    present = ~np.isnan(cell.matrix)
    any_value: npt.NDArray[np.bool_] = np.asarray(present.any(axis=1))
    with np.errstate(invalid="ignore"):
        slot_mean = np.where(any_value, np.nanmean(np.where(any_value[:, None], cell.matrix, 0.0), axis=1), 0.0)
    resid = np.where(present, cell.matrix - slot_mean[:, None], 0.0)
    return np.column_stack([resid, present.astype(np.float64), slot_mean, any_value.astype(np.float64)])


def _pair_row(r: FloatArray, c: FloatArray, totals: FloatArray | None, nonpositive: Nonpositive,
              confidence: float) -> dict[str, object]:
    """Signed relative gap of two identifiers' means on their matched slots ``r``, ``c``; ``totals``:
    replicate sums of [r, c] (see :func:`_cpg_suff`). Interval: the slot bootstrap's; p: the larger of
    the swap test's (the two identities swapped slot by slot, :mod:`counterbench.stats.swap_test`) and
    the interval's t-test's (:func:`counterbench.stats.inference.both_tests_pvalue`) — the row holds the
    swap test to run (``_swap``) and the t-test's p (``_p_t``) until :func:`_pair_pvalues` runs the
    swap tests of every row at once."""
    n = r.size
    gap = float(relative_gap(r.mean(), c.mean(), signed=True, nonpositive=nonpositive)) if n else np.nan
    reps = None if totals is None else relative_gap(totals[:, 0], totals[:, 1], signed=True, nonpositive=nonpositive)
    design = slot_design(np.abs(r) + np.abs(c))  # a slot weighs its answers' level (a gap of sums)
    low, high = _interval(reps, confidence, design, gap, n)

    def gap_of(t: FloatArray) -> FloatArray:
        return relative_gap(t[:, 0], t[:, 1], signed=True, nonpositive=nonpositive)

    p_t = (float(slot_t_pvalue(gap, reps[None, :], 2, factor=design[0], df=design[1])[0]) if reps is not None
           else np.nan)
    return {"gap": gap, "ci_low": low, "ci_high": high, "p_value": np.nan, "_reps": reps, "_p_t": p_t,
            "_swap": (np.column_stack([r, c]), np.column_stack([c, r]), gap_of),
            "_above": int(np.count_nonzero(r > c)), "_below": int(np.count_nonzero(r < c)),
            "sign_consistency": float(np.count_nonzero(r > c) * 100.0 / n) if n else np.nan,
            "tie_share": float(np.count_nonzero(r == c) * 100.0 / n) if n else np.nan,
            "mean_reference": float(r.mean()) if n else np.nan, "mean_comparison": float(c.mean()) if n else np.nan,
            "n_slots": n, "significant": bool(low > 0 or high < 0)}


def _pair_pvalues(rows: list[dict[str, object]], swaps: SwapTest) -> None:
    """Fill each :func:`_pair_row` row's ``p_value``: its swap test (all rows' in one batch,
    :meth:`SwapTest.pvalues`) and its t-test together."""
    tests = [row.pop("_swap") for row in rows]
    for row, p_swap in zip(rows, swaps.pvalues(tests), strict=True):  # type: ignore[arg-type]
        row["p_value"] = both_tests_pvalue(p_swap, float(row.pop("_p_t")))  # type: ignore[arg-type]


def _mog_row(cell: _Cell, suff: FloatArray) -> dict[str, object]:
    """MOG of slot-adjusted means, no interval (default profile; see the module docstring)."""
    k = len(cell.names)
    means = _adjusted_means(suff.sum(axis=0)[None, :], k)
    gap, hi, lo = max_relative_gap(means)
    ok = not np.isnan(gap[0])
    low = high = np.nan
    return {"max_gap": float(gap[0]), "top_identifier": cell.names[hi[0]] if ok else None,
            "bottom_identifier": cell.names[lo[0]] if ok else None,
            "top_mean": float(means[0, hi[0]]) if ok else np.nan,
            "bottom_mean": float(means[0, lo[0]]) if ok else np.nan, "ci_low": low, "ci_high": high,
            "n_identifiers": k, "n_slots": int((~np.isnan(cell.matrix)).any(axis=1).sum())}


def _mog_release_row(cell: _Cell, totals: FloatArray | None, top: str, bottom: str,
                     confidence: float) -> dict[str, object]:
    means = np.nanmean(cell.matrix, axis=0)
    fixed = _pair_row(*_pair_values(cell, top, bottom), totals, "keep", confidence)  # its interval only
    i, j = cell.names.index(top), cell.names.index(bottom)
    gap = float(relative_gap(means[i], means[j], signed=True, nonpositive="keep"))
    return {"max_gap": gap, "top_identifier": top, "bottom_identifier": bottom, "top_mean": float(means[i]),
            "bottom_mean": float(means[j]), "ci_low": fixed["ci_low"], "ci_high": fixed["ci_high"],
            "n_identifiers": len(cell.names), "n_slots": int((~np.isnan(cell.matrix)).any(axis=1).sum())}


def _group_cells(gblock: pd.DataFrame, universe: pd.MultiIndex, pairs: Mapping[str, tuple[str, str]],
                 profile: AnalysisProfile) -> tuple[list[_Cell], FloatArray]:
    """The cells of one model × language × use case and their stacked sufficient statistics."""
    cells: list[_Cell] = []
    parts: list[FloatArray] = []
    width = 0
    values = gblock.to_numpy(np.float64)
    names_all = [str(c) for c in gblock.columns]
    slots = universe.get_indexer(gblock.index.droplevel(CELL))  # type: ignore[arg-type]
    axes = gblock.index.get_level_values("axis").astype(str)
    head = dict(zip(CELL[:3], (str(v) for v in gblock.index[0][:3]), strict=True))
    for axis in dict.fromkeys(axes):
        rows = np.flatnonzero(axes == axis)
        cols = np.flatnonzero(~np.isnan(values[rows]).all(axis=0))
        matrix = np.full((len(universe), cols.size), np.nan)
        matrix[slots[rows]] = values[np.ix_(rows, cols)]
        cell = _Cell({**head, "axis": axis}, matrix, [names_all[c] for c in cols], None, {})
        pair = pairs.get(axis)
        if pair is not None and pair[0] in cell.names and pair[1] in cell.names:
            cell.cpg = pair
            parts.append(_cpg_suff(cell, *pair))
            parts.append(_slot_gap_suff(cell, *pair, profile.nonpositive))
            cell.blocks["cpg"] = (width, width + 2)
            cell.blocks["cpg_slots"] = (width + 2, width + 4)
            width += 4
        if len(cell.names) >= 2:
            if profile.mog_reselect:
                suff = _mog_suff(cell)
            else:
                means = np.nanmean(cell.matrix, axis=0)
                top, bottom = cell.names[int(np.nanargmax(means))], cell.names[int(np.nanargmin(means))]
                cell.blocks["release_pair"] = (cell.names.index(top), cell.names.index(bottom))
                suff = _cpg_suff(cell, top, bottom)
            parts.append(suff)
            cell.blocks["mog"] = (width, width + suff.shape[1])
            width += suff.shape[1]
        cells.append(cell)
    stacked = np.hstack(parts) if parts else np.zeros((len(universe), 0))
    return cells, stacked


def identifier_tables(values: pd.DataFrame, adjusted: pd.DataFrame, profile: AnalysisProfile, *,
                      resampler: SlotResampler, confidence: float = 0.95,
                      canonical_pairs: Mapping[str, tuple[str, str]]) -> dict[str, pd.DataFrame]:
    """``cpg``, ``mog`` and ``identifier_deviation`` for standard-prompt ``values`` (``adjusted``: the
    same rows with slot-adjusted values, used for the deviation). Slot resamples: ``resampler``;
    ``canonical_pairs``: axis -> (reference, comparison)."""
    pairs = dict(canonical_pairs)
    out: dict[str, pd.DataFrame] = {}
    if values.empty:
        return out
    keyed = values.assign(identifier=values["identifier"].astype(str))
    wide = keyed.set_index([*CELL, *SLOT, "identifier"])["value"].unstack("identifier")
    index = cast(pd.MultiIndex, wide.index)
    levels = [index.levels[index.names.index(c)].astype(str) for c in SLOT]
    wide.index = index.set_levels(levels, level=SLOT)  # type: ignore[arg-type]
    cpg_rows, mog_rows = [], []
    deviations: list[pooled.DeviationSlice] = []
    swaps = SwapTest(stable_seed("swap_test", base_seed=resampler.seed))
    for gkey, gblock in wide.groupby(level=GROUP_COLUMNS, observed=True, sort=True):
        group = tuple(str(k) for k in gkey)
        cells, suff = _group_cells(gblock, resampler.universe(group), pairs, profile)
        totals = resampler.weights(group) @ suff if resampler.n_boot > 0 and suff.shape[1] else None
        for cell in cells:
            for table, (a, b) in cell.blocks.items():
                if table in ("release_pair", "cpg_slots"):
                    continue
                part, reps = suff[:, a:b], None if totals is None else totals[:, a:b]
                if table == "cpg" and cell.cpg is not None:
                    row = _pair_row(*_pair_values(cell, *cell.cpg), reps, profile.nonpositive, confidence)
                    sa, sb = cell.blocks["cpg_slots"]
                    row["_slot_gaps"] = suff[suff[:, sb - 1] > 0, sa]  # the matched slots' signed gaps
                    with np.errstate(divide="ignore", invalid="ignore"):
                        row["_slot_gap"] = float(suff[:, sa].sum() / suff[:, sb - 1].sum())
                        row["_slot_reps"] = None if totals is None else totals[:, sa] / totals[:, sb - 1]
                    row["_slot_n"] = int(suff[:, sb - 1].sum())
                    cpg_rows.append({**cell.key, "reference": cell.cpg[0], "comparison": cell.cpg[1], **row})
                elif table == "mog" and profile.mog_reselect:
                    mog_rows.append({**cell.key, **_mog_row(cell, part)})
                    if reps is not None:
                        deviations.append(pooled.DeviationSlice(cell.key, cell.names, _adjusted_means(reps, len(
                            cell.names)), int((~np.isnan(cell.matrix)).any(axis=1).sum())))
                elif table == "mog":
                    i, j = cell.blocks["release_pair"]
                    mog_rows.append({**cell.key, **_mog_release_row(cell, reps, cell.names[i], cell.names[j],
                                                                    confidence)})
    _pair_pvalues(cpg_rows, swaps)
    out["cpg"], out["cpg_overall"] = pooled.cpg_tables(cpg_rows, confidence, swaps)
    out["mog"] = pd.DataFrame.from_records(mog_rows)
    deviation = identifier_deviation(adjusted, CELL, average_over=["use_case", "language"])
    deviation = deviation[["model", "axis", "identifier", "deviation", "n_slices"]]
    out["identifier_deviation"] = pooled.with_deviation_intervals(deviation, deviations, confidence)
    return out
