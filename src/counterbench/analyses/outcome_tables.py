"""The generic outcome tables, for every outcome kind (amount, rate, score, label, choice, text). Pure.

Every kind reduces an answer to one number ``y`` (:meth:`OutcomeKind.measure`: an amount, a rate in %,
a score, 100 × "gave the positive label", 100 × "this identity was chosen", a text metric), and says how
two means compare (:meth:`OutcomeKind.comparison`: a difference in its unit, or for amounts the pair-mean
Δ% 100 × (comparison − reference) / the pair's mean, :mod:`.gap_forms`), so one set of compositions serves
them all. Amount use
cases get these tables beside the amount tables (:mod:`counterbench.families.amount`).
Each table is declared once in :data:`OUTCOME_TABLES` (columns and what
a row is) and built by one function.

Decisions:

- A gap's form comes from the kind (the rows' ``gap_form``, :mod:`.gap_forms`: ``difference`` or
  ``pair_mean``); ``difference``, its interval, its p and its mark are in that form — the number every
  finding, the gate and the viewer state — and ``relative_pct`` is always the ratio form (% of the
  reference), shown labelled in the table and never marked or quoted.
- Comparisons are matched: a level is compared with the facet's reference inside the same *slot*
  (the study's slot columns: prompts that differ only in what the facet varies); the slot is the
  independent unit.
- **Intervals** of a gap (``outcome_gaps``) and of a language shift (``language_gaps``): the slot
  bootstrap's standard error with the small-sample variance factor and degrees of freedom of
  :func:`counterbench.stats.inference.slot_design` / :func:`~counterbench.stats.inference.slot_interval`
  (a slot weighs its number of answers; equal slots: ``n/(n − 1)`` and ``n − 1`` df) — a plain
  percentile interval of a few slots is too narrow (4 slots: 85–87% coverage in simulation). Level means
  (``outcome_levels``) are descriptive and keep the percentile interval; nothing is marked on them.
- **Shared bootstrap weights**: the levels and gaps of one cell and facet (and the language shifts of
  one model × use case × facet) resample the same slots with one weight matrix, drawn from one seed of
  the cell (:func:`.slot_inference.shared_totals`); a comparison that lacks some of those slots uses
  the weights of its own. Its replicates then resample the cell's slots, not its own alone: to first
  order the same variance, and one draw instead of one per comparison (each drew 2,000 replicates from
  40 generators; about 2,100 comparisons a model).
- **p-values**: the larger of (:func:`counterbench.stats.inference.both_tests_pvalue`) the swap test
  of the two conditions slot by slot (:mod:`counterbench.stats.swap_test`: the comparison and the
  reference — or the two languages — exchanged within a slot; exact under "the identity (the
  language) changes nothing" for any answer law; seeded from the analysis seed) and the slot
  interval's t-test, as in the amount tables.
- **Marks** (``significant``): :func:`counterbench.stats.inference.earned_marks` — a row is
  ``testable`` with at least ``MIN_SLOTS`` matched slots (6: the fewest whose swap test can reach
  0.05; otherwise no p, no q, no mark: "too few matched prompts to test (n = …)"; the interval is
  shown from ``MIN_SLOTS_INTERVAL``), Benjamini–Hochberg q ≤ 0.05 within the family *and* the 95%
  interval excludes 0. The family here is one model's rows of the table; the analysis then re-marks every
  table in the model's one family (:mod:`.families`). ``docs/analysis.md`` gives the simulation.
- ``label`` comparisons also give Fisher's exact test on the pooled 2 × 2 counts (``exact_p``; it
  ignores the clustering, so it is shown but never marks).
- Only ``standard``-variant rows with status ``ok`` enter; other statuses count in ``parse_health``.
- Crossed designs also get a regression on all attributes at once (``crossed_regression``): a
  logistic model for labels (log-odds, as DiscrimEval's discrimination score), least squares
  otherwise, with one fixed effect per scenario (use case × profile × question variant) and
  slot-cluster-robust standard errors (statsmodels' CR1: the ``G/(G − 1) · (N − 1)/(N − K)``
  small-sample correction) with t on ``clusters − 1`` degrees of freedom — normal quantiles and an
  uncorrected sandwich are too small with few clusters. Standard errors and intervals from
  ``MIN_SLOTS_INTERVAL`` clusters, p from ``MIN_SLOTS`` clusters; descriptive in the analysis (it tests
  the gap table's contrasts again: no mark, :mod:`.families`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from counterbench.analyses.gap_forms import gap_statistic, ratio
from counterbench.analyses.slot_inference import SlotIntervals, shared_totals, slot_bootstraps, swap_tested
from counterbench.outcomes import get_kind, measures_share, member
from counterbench.outcomes.base import OutcomeSpec, comparison_of
from counterbench.stats.inference import MIN_SLOTS, earned_marks
from counterbench.stats.seeding import stable_seed
from counterbench.stats.swap_test import SwapTest
from counterbench.studies.base import Facet

CONFIDENCE = 0.95
_CELL = ["model", "use_case", "kind", "language"]

#: table -> (columns, what one row is)
OUTCOME_TABLES: dict[str, tuple[tuple[str, ...], str]] = {
    "outcome_levels": (
        (*_CELL, "facet", "facet_kind", "level", "n", "n_slots", "mean", "ci_low", "ci_high", "measure"),
        "the mean outcome of one level (identifier, group or attribute level), slot-cluster bootstrap CI",
    ),
    "outcome_gaps": (
        (*_CELL, "facet", "facet_kind", "reference", "comparison", "n_slots", "reference_mean", "comparison_mean",
         "difference", "ci_low", "ci_high", "relative_pct", "relative_ci_low", "relative_ci_high", "p_value",
         "q_value", "testable", "significant", "exact_p", "difference_unit"),
        "comparison vs reference inside matched slots (in the kind's comparison: its unit, or for amounts % of the "
        "pair's mean; and relative_pct, % of the reference), "
        "slot interval with the small-sample correction; p: the larger of the swap test's and the interval's "
        "t-test's; marks BH in the model's one family (every table that marks)",
    ),
    "language_gaps": (
        ("model", "use_case", "kind", "facet", "facet_kind", "reference", "comparison", "language", "other_language",
         "n_slots", "difference", "other_difference", "shift", "ci_low", "ci_high", "p_value", "q_value",
         "testable", "significant"),
        "how much a gap differs between two languages (difference in one − in the other), paired by slot",
    ),
    "crossed_regression": (
        ("model", "kind", "language", "attribute", "level", "reference", "estimate", "se", "ci_low", "ci_high",
         "p_value", "q_value", "testable", "significant", "model_type", "n", "n_clusters"),
        "the effect of one attribute level against its reference, all crossed attributes in one model "
        "with scenario fixed effects and slot-clustered (CR1) standard errors, t with clusters − 1 df; "
        "descriptive (no marks: it tests the gap table's contrasts again)",
    ),
}


def conform(name: str, frame: pd.DataFrame | None) -> pd.DataFrame:
    columns = list(OUTCOME_TABLES[name][0])
    if frame is None or frame.empty:
        return pd.DataFrame({c: pd.Series(dtype="float64") for c in columns})
    return frame.reindex(columns=columns).reset_index(drop=True)


def measured_rows(values: pd.DataFrame, outcomes: Mapping[str, OutcomeSpec]) -> pd.DataFrame:
    """Standard-variant rows with ``kind``, ``measure``, ``unit``, ``gap_form`` (the kind's comparison) and
    ``y`` (choice rows: one per offered option)."""
    parts = []
    for use_case, part in values.groupby("use_case", sort=False, observed=True):
        spec = outcomes.get(str(use_case))
        if spec is None:
            continue
        kind = get_kind(spec.kind)
        compare = comparison_of(kind, spec)
        part = part.assign(kind=spec.kind, measure=kind.describe(spec), unit=compare.unit_words,
                           gap_form=compare.form)
        part = member(kind, "offered_rows")(spec, part)  # one row per answer, or several identities per answer
        parts.append(part)
    if not parts:
        return pd.DataFrame()
    out = pd.concat(parts, ignore_index=True)
    out = out[out["status"].astype(str).eq("ok") & np.isfinite(out["y"].astype("float64"))]
    return out.reset_index(drop=True)


def narrowed(rows: pd.DataFrame, facets: Sequence[Facet], slot_columns: Sequence[str],
             extra: Sequence[str] = ()) -> pd.DataFrame:
    """``rows`` with only the columns the tables read (the cell, the measure, the facets' and slot columns):
    every filter of a cell then copies a few columns instead of every answer's texts."""
    keep = [*_CELL, "y", "measure", "unit", "gap_form", "axis", *(f.column for f in facets), *slot_columns, *extra]
    return rows[[c for c in dict.fromkeys(keep) if c in rows.columns]]


class _ColumnCodes:
    """Each slot column of one cell coded once, for every facet's rows of the cell: a facet's slot codes
    (:func:`_slot_codes`) are combined from these codes instead of coding its rows again."""

    def __init__(self, frame: pd.DataFrame, columns: Sequence[str]) -> None:
        self.frame = frame
        self.codes = {c: pd.factorize(_as_text(frame[c]), sort=False) for c in columns if c in frame.columns}

    def slot_codes(self, keep: np.ndarray, columns: Sequence[str]) -> np.ndarray:
        """:func:`_slot_codes` of the rows ``keep`` over ``columns``."""
        cols = [c for c in columns if c in self.codes]
        n = int(keep.sum())
        if not cols or n == 0:
            return np.zeros(n, dtype=np.int64)
        key = np.zeros(n, dtype=np.int64)
        combinations = 1
        for col in cols:
            codes, uniques = self.codes[col]
            picked = codes[keep]
            combinations *= max(1, len(uniques))
            if combinations >= 2**62 or (picked < 0).any():  # NA in a column, or too many combinations: group
                text = self.frame.loc[keep, cols].astype(str)
                return text.groupby(cols, sort=False, dropna=False).ngroup().to_numpy(np.int64)
            key = key * len(uniques) + picked
        return np.asarray(pd.factorize(key, sort=False)[0], dtype=np.int64)


def _slot_codes(frame: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    """An integer code per row: rows with the same values in ``columns`` (as text) share it, numbered in the
    order they first appear (a grouping's ``ngroup`` without sorting).

    Each column's text is coded on its own and the codes are combined into one number per row, which is
    coded again in order of appearance: the same codes as grouping by the text columns, at half the cost.
    A missing value, or more combinations than an int64 holds, takes the grouping itself."""
    return _ColumnCodes(frame, columns).slot_codes(np.ones(len(frame), dtype=bool), columns)


def _as_text(column: pd.Series) -> pd.Series:
    """``column`` as text for coding: a text or plain-integer column as it is (its values already tell apart
    exactly the rows their text does, so its codes are the same), any other column converted."""
    if isinstance(column.dtype, pd.StringDtype) or (column.dtype.kind in "iu" and isinstance(column.dtype, np.dtype)):
        return column
    return column.astype(str)


def _suff(y: np.ndarray, codes: np.ndarray, n: int) -> np.ndarray:
    return np.column_stack([np.bincount(codes, weights=y, minlength=n), np.bincount(codes, minlength=n)])


def _shift_of(gap: Any) -> Any:
    """The gap in the first language − the same gap in the other (8 summed columns)."""
    def shift(t: np.ndarray) -> np.ndarray:
        return np.asarray(gap(t) - gap(t[:, 4:]), dtype=np.float64)
    return shift


def _mean(t: np.ndarray) -> np.ndarray:
    return np.asarray(t[:, 0] / t[:, 1], dtype=np.float64)


def _boot(suff: np.ndarray, statistic: Any, n_boot: int, seed: int, percentile: bool = True,
          totals: np.ndarray | None = None) -> tuple[float, float, float, np.ndarray | None]:
    """(estimate, percentile low, percentile high, replicates) of a slot-cluster bootstrap; without
    ``percentile`` low and high are NaN (a slot interval is made from the replicates instead).
    ``totals``: the replicate totals of the cell's shared weights (:func:`.slot_inference.shared_totals`)."""
    return slot_bootstraps(suff, [statistic], n_boot, seed, CONFIDENCE, percentile=percentile, totals=totals)[0]


def _matched(s: np.ndarray, counts: Sequence[int]) -> np.ndarray:
    """``s`` (slots × columns) with zero rows where any of the ``counts`` columns is 0: the slots a
    comparison matches, in the layout of all the facet's slots (for the shared bootstrap weights)."""
    keep = np.logical_and.reduce([s[:, c] > 0 for c in counts])
    return np.where(keep[:, None], s, 0.0)


def facet_mask(frame: pd.DataFrame, facet: Facet) -> np.ndarray:
    """Which rows of ``frame`` state ``facet``: its column is set (and, for a facet of one axis, the row is
    of that axis); none when the frame has no such column."""
    if facet.column not in frame.columns:
        return np.zeros(len(frame), dtype=bool)
    keep = frame[facet.column].notna().to_numpy(dtype=bool, copy=True)
    if facet.axis is not None and "axis" in frame.columns:  # one filter for both conditions: the same rows
        keep &= (frame["axis"].astype(str) == facet.axis).to_numpy(dtype=bool)
    return keep


def _facet_rows(frame: pd.DataFrame, facet: Facet) -> pd.DataFrame:
    if facet.column not in frame.columns:
        return frame.iloc[0:0]
    rows = frame[facet_mask(frame, facet)]
    return rows.assign(level=rows[facet.column].astype(str))


def level_and_gap_tables(rows: pd.DataFrame, facets: Sequence[Facet], slot_columns: Sequence[str],
                         n_boot: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``outcome_levels`` and ``outcome_gaps`` for every model × use case × language × facet. The levels
    and gaps of one cell and facet share one draw of bootstrap weights over the facet's slots (see the
    module notes)."""
    levels: list[dict[str, Any]] = []
    gaps: list[dict[str, Any]] = []
    if rows.empty:
        return conform("outcome_levels", None), conform("outcome_gaps", None)
    rows = narrowed(rows, facets, slot_columns)
    swaps = SwapTest(stable_seed("outcome_gaps_swap_test", base_seed=seed))
    pending: list[tuple[dict[str, Any], np.ndarray, list[int], Any]] = []
    intervals = SlotIntervals(CONFIDENCE)
    for cell, part in rows.groupby(_CELL, sort=False, observed=True):
        base = dict(zip(_CELL, (str(c) for c in cell), strict=True))
        measure, unit = str(part["measure"].iloc[0]), str(part["unit"].iloc[0])
        gap = gap_statistic(part)
        coded = _ColumnCodes(part, slot_columns)
        values = part["y"].to_numpy(dtype=np.float64)
        for facet in facets:
            keep = facet_mask(part, facet)
            if not keep.any():
                continue
            codes = coded.slot_codes(keep, [c for c in slot_columns if c != facet.column])
            n_slots = int(codes.max()) + 1
            y = values[keep]
            lv = part[facet.column][keep].astype(str).to_numpy()
            seen = set(pd.unique(lv))
            present = [lvl for lvl in facet.levels if lvl in seen]
            level_suff = {level: _suff(y[lv == level], codes[lv == level], n_slots) for level in present}
            compared = [] if facet.reference not in present else [lvl for lvl in present if lvl != facet.reference]
            gap_suff = {level: _matched(np.hstack([level_suff[level], level_suff[facet.reference]]), (1, 3))
                        for level in compared}
            gap_suff = {level: s for level, s in gap_suff.items() if s[:, 1].any()}
            boot_seed = stable_seed("outcome_slots", *cell, facet.name, base_seed=seed)
            totals = shared_totals([*level_suff.values(), *gap_suff.values()], n_boot, boot_seed)
            facet_base = {**base, "facet": facet.name, "facet_kind": facet.kind}
            for (level, full), level_totals in zip(level_suff.items(), totals, strict=False):
                s = full[full[:, 1] > 0]
                est, lo, hi, _ = _boot(s, _mean, n_boot, boot_seed, totals=level_totals)
                levels.append({**facet_base, "level": level, "n": int((lv == level).sum()), "n_slots": len(s),
                               "mean": est, "ci_low": lo, "ci_high": hi, "measure": measure})
            for (level, full), gap_totals in zip(gap_suff.items(), totals[len(level_suff):], strict=True):
                s = full[full[:, 1] > 0]  # matched slots only
                row = _gap_row({**facet_base, "reference": facet.reference, "comparison": level,
                                "difference_unit": unit}, s, gap, (n_boot, boot_seed), gap_totals, intervals)
                gaps.append(row)
                pending.append((row, s, [2, 3, 0, 1], gap))
    intervals.fill()
    swap_tested(swaps, pending)
    return conform("outcome_levels", pd.DataFrame(levels)), conform("outcome_gaps", _marked(pd.DataFrame(gaps)))


def _gap_row(row: dict[str, Any], s: np.ndarray, gap: Any, boot: tuple[int, int], totals: np.ndarray | None,
             intervals: SlotIntervals) -> dict[str, Any]:
    """One ``outcome_gaps`` row of a comparison's matched slots ``s`` (comparison sums, counts, reference
    sums, counts) and its replicate totals (``boot``: replicates and seed); its intervals are noted in
    ``intervals``."""
    n_boot, boot_seed = boot
    if gap is ratio:
        diff, _, _, reps = _boot(s, gap, n_boot, boot_seed, percentile=False, totals=totals)
        rel, rel_reps = diff, reps
    else:
        (diff, _, _, reps), (rel, _, _, rel_reps) = slot_bootstraps(
            s, [gap, ratio], n_boot, boot_seed, CONFIDENCE, percentile=False, totals=totals)
    weights = s[:, 1] + s[:, 3]  # a slot weighs its answers
    total = s.sum(axis=0)
    row.update({"n_slots": len(s), "reference_mean": total[2] / total[3], "comparison_mean": total[0] / total[1],
                "difference": diff, "ci_low": np.nan, "ci_high": np.nan, "relative_pct": rel,
                "relative_ci_low": np.nan, "relative_ci_high": np.nan, "p_value": np.nan, "exact_p": np.nan})
    intervals.add(row, ("ci_low", "ci_high", "_p_t"), diff, reps, weights)
    intervals.add(row, ("relative_ci_low", "relative_ci_high"), rel, rel_reps, weights)
    if measures_share(str(row["kind"])) and len(s) >= MIN_SLOTS:
        k1, n1 = total[0] / 100.0, total[1]
        k0, n0 = total[2] / 100.0, total[3]
        table = np.array([[k1, n1 - k1], [k0, n0 - k0]]).round().astype(np.int64)
        from scipy.stats import fisher_exact  # here: scipy.stats takes 0.5 s to import, few tables need it

        row["exact_p"] = float(fisher_exact(table)[1])
    return row


def _marked(frame: pd.DataFrame, n_col: str = "n_slots") -> pd.DataFrame:
    """``testable``, BH ``q_value`` within each model's rows and ``significant`` (q ≤ 0.05 and the
    interval excludes 0): :func:`counterbench.stats.inference.earned_marks`; no p where untestable."""
    if frame.empty:
        return frame
    frame = earned_marks(frame, n_col=n_col)
    frame.loc[~frame["testable"].astype(bool), "p_value"] = np.nan
    return frame


def language_gap_table(rows: pd.DataFrame, facets: Sequence[Facet], slot_columns: Sequence[str],
                       languages: Sequence[str], n_boot: int, seed: int) -> pd.DataFrame:
    """Each gap in the first language against the same gap in every other language, paired by slot."""
    out: list[dict[str, Any]] = []
    spoken = set() if rows.empty else set(rows["language"].astype(str).unique())
    present = [lang for lang in languages if lang in spoken]
    if len(present) < 2:
        return conform("language_gaps", None)
    first = present[0]
    keys = ["model", "use_case", "kind"]
    rows = narrowed(rows, facets, slot_columns)
    swaps = SwapTest(stable_seed("language_gaps_swap_test", base_seed=seed))
    pending: list[tuple[dict[str, Any], np.ndarray, list[int], Any]] = []
    intervals = SlotIntervals(CONFIDENCE)
    for cell, part in rows.groupby(keys, sort=False, observed=True):
        for facet in facets:
            frows = _facet_rows(part, facet)
            if frows.empty:
                continue
            y, lv = frows["y"].to_numpy(np.float64), frows["level"].to_numpy()
            seen = set(pd.unique(lv))
            if facet.reference not in seen:
                continue
            codes = _slot_codes(frows, [c for c in slot_columns if c not in (facet.column, "language")])
            n = int(codes.max()) + 1
            gap = gap_statistic(frows)
            shift = _shift_of(gap)
            lang = frows["language"].astype(str).to_numpy()
            shifts: dict[tuple[str, str], np.ndarray] = {}
            for other in present[1:]:
                for level in facet.levels:
                    if level == facet.reference or level not in seen:
                        continue
                    masks = [(lv == level) & (lang == first), (lv == facet.reference) & (lang == first),
                             (lv == level) & (lang == other), (lv == facet.reference) & (lang == other)]
                    full = _matched(np.hstack([_suff(y[m], codes[m], n) for m in masks]), (1, 3, 5, 7))
                    if full[:, 1].any():
                        shifts[(other, level)] = full
            boot_seed = stable_seed("language_slots", *cell, facet.name, base_seed=seed)
            totals = shared_totals(list(shifts.values()), n_boot, boot_seed)
            for ((other, level), full), shift_totals in zip(shifts.items(), totals, strict=True):
                s = full[full[:, 1] > 0]
                est, _, _, reps = _boot(s, shift, n_boot, boot_seed, percentile=False, totals=shift_totals)
                t = s.sum(axis=0)
                row = {**dict(zip(keys, (str(c) for c in cell), strict=True)), "facet": facet.name,
                       "facet_kind": facet.kind, "reference": facet.reference, "comparison": level,
                       "language": first, "other_language": other, "n_slots": len(s),
                       "difference": float(gap(t[None, :4])[0]), "other_difference": float(gap(t[None, 4:])[0]),
                       "shift": est, "ci_low": np.nan, "ci_high": np.nan, "p_value": np.nan}
                intervals.add(row, ("ci_low", "ci_high", "_p_t"), est, reps, s[:, [1, 3, 5, 7]].sum(axis=1))
                out.append(row)
                # a swap exchanges the slot's two languages (both identities at once)
                pending.append((row, s, [4, 5, 6, 7, 0, 1, 2, 3], shift))
    intervals.fill()
    swap_tested(swaps, pending)
    return conform("language_gaps", _marked(pd.DataFrame(out)))
