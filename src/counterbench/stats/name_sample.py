"""Group comparisons that generalise over names: the names of a group as a sample of names like them. Pure.

A names-grouped design (names associated with women and with men, with one race or another) asks each
name in the same slots (prompts that differ only in the name). The slot-matched group gap of
``outcome_gaps`` resamples slots only: it answers "do *these* names' groups differ?", and a model
that reacts to single names — one name scored high, another low — gives that gap a true value other
than 0 even when the groups do not differ in expectation over names. Inference that generalises to
other names of the same groups must treat the *name* as the independent unit.

Decisions:

- **A name's value** is its slot-adjusted mean: each answer minus the mean of every answer of its
  slot (all names of the facet), averaged over the name's answers. With every name answered in every
  slot the group difference equals the difference of the names' plain means; with missing answers
  the slot adjustment keeps a name that missed an easy slot from looking worse. For a kind whose gap
  is a ratio (amounts) an answer counts as ``100 × (answer / slot mean − 1)``, so the group gap is in
  % of the slot mean; a slot whose mean is 0 gives no ratio and is left out.
- **The group comparison** is Welch's t over names (:func:`counterbench.stats.welch.welch_from_moments`:
  sample variances with ddof 1, Welch–Satterthwaite degrees of freedom): the difference of the two
  groups' mean name values, the interval ``difference ± t(df) · se``, a two-sided p. A name's value
  carries its own sampling noise as well as its name effect, so the spread between names covers both.
- **At least** :data:`MIN_NAMES` **names in each group** (3): with 2 names a group's variance rests on
  one degree of freedom and the interval is unusably wide; fewer: no interval, no p (the table says why).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from counterbench.stats.arrays import FloatArray
from counterbench.stats.distributions import t_isf
from counterbench.stats.welch import welch_from_moments

__all__ = ["MIN_NAMES", "NameSampleGap", "name_sample_gap", "slot_adjusted_name_means"]

#: the fewest names a group needs for a comparison over names
MIN_NAMES = 3


@dataclass(frozen=True)
class NameSampleGap:
    """One group against the reference group over names (see the module notes)."""

    difference: float
    se: float
    df: float
    ci_low: float
    ci_high: float
    p_value: float
    n_comparison: int
    n_reference: int


def slot_adjusted_name_means(y: npt.ArrayLike, slots: npt.ArrayLike, names: npt.ArrayLike, *,
                             ratio: bool = False) -> tuple[npt.NDArray[np.int64], FloatArray]:
    """(name codes, their slot-adjusted means) of answers ``y`` with integer slot and name codes
    (see the module notes; ``ratio``: each answer as % of its slot's mean). Names without a usable
    answer are left out."""
    yv = np.asarray(y, dtype=np.float64)
    sc = np.asarray(slots, dtype=np.int64)
    nc = np.asarray(names, dtype=np.int64)
    if yv.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    totals = np.bincount(sc, weights=yv)
    counts = np.bincount(sc)
    slot_mean = (totals / np.maximum(counts, 1))[sc]
    if ratio:
        with np.errstate(divide="ignore", invalid="ignore"):
            adjusted = np.where(slot_mean != 0, 100.0 * (yv / slot_mean - 1.0), np.nan)
    else:
        adjusted = yv - slot_mean
    ok = np.isfinite(adjusted)
    sums = np.bincount(nc[ok], weights=adjusted[ok], minlength=int(nc.max()) + 1)
    n = np.bincount(nc[ok], minlength=int(nc.max()) + 1)
    present = np.flatnonzero(n > 0)
    return present.astype(np.int64), np.asarray(sums[present] / n[present], dtype=np.float64)


def name_sample_gap(comparison: npt.ArrayLike, reference: npt.ArrayLike, confidence: float = 0.95) -> NameSampleGap:
    """Welch's comparison of the comparison group's name values with the reference group's (see the module
    notes); every statistic NaN with fewer than :data:`MIN_NAMES` names in a group or no spread at all."""
    a = np.asarray(comparison, dtype=np.float64)
    b = np.asarray(reference, dtype=np.float64)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    diff = float(a.mean() - b.mean()) if a.size and b.size else float("nan")
    if a.size < MIN_NAMES or b.size < MIN_NAMES:
        nan = float("nan")
        return NameSampleGap(diff, nan, nan, nan, nan, nan, int(a.size), int(b.size))
    va, vb = a.var(ddof=1), b.var(ddof=1)
    t, df, p, _ = welch_from_moments(a.mean(), va, a.size, b.mean(), vb, b.size)
    se = float(np.sqrt(va / a.size + vb / b.size))
    if not np.isfinite(float(t)):
        nan = float("nan")
        return NameSampleGap(diff, se, nan, nan, nan, nan, int(a.size), int(b.size))
    half = float(t_isf((1 - confidence) / 2, float(df))) * se
    return NameSampleGap(diff, se, float(df), diff - half, diff + half, float(p), int(a.size), int(b.size))
