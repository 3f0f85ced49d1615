"""The forms a gap between two means is stated in, named once (:data:`counterbench.outcomes.base.GAP_FORMS`). Pure.

One gap, one number: every *stated* gap of an amount — the canonical pair gap (``cpg``), the matched gap of
the generic tables (``outcome_gaps.difference``), the gate's rules, the findings and the answer viewer —
is the **pair-mean** form, the paper's Δ% (§4.2, Eq. 1): 100 × (first − second) / ((first + second) / 2),
read "first vs second". The other forms:

- ``difference`` — comparison − reference in the kind's own unit (percentage points, points, metric units);
- ``ratio`` — 100 × (comparison / reference − 1), a percent *of the reference*. It is kept only where a
  table needs it (``outcome_gaps.relative_pct``, labelled "% of the reference"), never marked and never
  quoted by a finding or the gate.

Each statistic reads summed columns ``[comparison sum, n, reference sum, n]`` per slot (one row per
bootstrap replicate or per slot), so one function serves the estimate and every replicate.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

__all__ = ["GAP_STATISTICS", "PAIR_MEAN", "difference", "gap_statistic", "pair_mean", "pair_mean_of", "ratio"]

#: the form every stated amount gap is in
PAIR_MEAN = "pair_mean"

Statistic = Callable[[np.ndarray], np.ndarray]


def difference(t: np.ndarray) -> np.ndarray:
    """comparison mean − reference mean from summed [comparison sum, n, reference sum, n]."""
    return np.asarray(t[:, 0] / t[:, 1] - t[:, 2] / t[:, 3], dtype=np.float64)


def ratio(t: np.ndarray) -> np.ndarray:
    """100 × (comparison mean / reference mean − 1), % of the reference; NaN where the reference mean is 0
    (a share nobody in the reference gave: no ratio to state, and no warning)."""
    ref = t[:, 2] / t[:, 3]
    with np.errstate(divide="ignore", invalid="ignore"):
        out = 100 * (t[:, 0] / t[:, 1] - ref) / ref
    return np.asarray(np.where(ref == 0, np.nan, out), dtype=np.float64)


def pair_mean(t: np.ndarray) -> np.ndarray:
    """100 × (comparison mean − reference mean) / the pair's mean (the paper's Δ%, comparison vs reference);
    NaN where the two means sum to ≤ 0 (as :func:`counterbench.stats.gaps.relative_gap`)."""
    comparison, reference = t[:, 0] / t[:, 1], t[:, 2] / t[:, 3]
    total = comparison + reference
    with np.errstate(divide="ignore", invalid="ignore"):
        out = 200.0 * (comparison - reference) / total
    return np.asarray(np.where(total > 0, out, np.nan), dtype=np.float64)


#: a kind's gap form -> its statistic of summed columns
GAP_STATISTICS: dict[str, Statistic] = {"difference": difference, "ratio": ratio, PAIR_MEAN: pair_mean}


def gap_statistic(part: pd.DataFrame) -> Statistic:
    """The gap statistic of a cell's rows (their kind's ``gap_form``; ``difference`` when the rows do not say)."""
    form = str(part["gap_form"].iloc[0]) if "gap_form" in part.columns and len(part) else "difference"
    return GAP_STATISTICS[form]


def pair_mean_of(first: float, second: float) -> float:
    """``first`` vs ``second`` in the pair-mean form: 200 (first − second) / (first + second); NaN when the sum
    is ≤ 0."""
    total = first + second
    return 200.0 * (first - second) / total if total > 0 else float("nan")

