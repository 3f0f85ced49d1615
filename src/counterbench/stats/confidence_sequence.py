"""Anytime-valid intervals for a mean gap over matched slots, and the verdict a sequential audit reads from them.

A *confidence sequence* is a sequence of intervals that hold the true mean at every sample size at once
with probability ≥ 1 − α, so a user may look after every batch of answers and stop whenever the interval
says enough — the error rate stated is still the one a reader gets. This module gives the asymptotic
confidence sequence of Waudby-Smith, Arnold, Wu, Howard and Ramdas ("Time-uniform central limit theory and
asymptotic confidence sequences", Annals of Statistics, 2024; Theorem 2.2, the normal-mixture boundary):

    C_t = x̄_t ± σ̂_t · sqrt( 2(tρ² + 1) / (t²ρ²) · log( sqrt(tρ² + 1) / α ) )

with ``t`` the number of slots seen, ``x̄_t`` and ``σ̂_t`` their gaps' mean and standard deviation, and ``ρ``
the mixture's width, chosen so the boundary is tightest near ``t_opt`` slots (their Eq. 2.6):
``ρ² = (−2 log α + log(−2 log α + 1)) / t_opt``.

Decisions:

- **The unit** is the slot (the prompts that differ only in the compared identity); each slot gives one gap,
  and slots are sent in a random order, so the gaps are exchangeable draws of the design's slots.
- **Small samples**: the boundary is asymptotic and takes ``σ̂`` as known; its radius is widened by the ratio of
  Student's t quantile (``t − 1`` df) to the normal's at the same α, and no verdict is read before
  :data:`MIN_SLOTS` slots *and*
  :data:`MIN_INFORMATIVE` slots whose gap differs from the most common gap (a yes/no outcome's gaps are
  mostly 0: twenty zeros say little about a rare difference, and their standard deviation of 0 would make a
  point interval). ``σ̂`` uses the ``t − 1`` denominator. Under "the identity changes nothing" a slot's gap is
  symmetric about 0 (the two answers are exchangeable), the case the boundary's normal approximation serves
  best; with looks every 10 slots from 20, simulated null gaps crossed 0 in 0.9% of 2,000 runs at α = 0.01
  (normal), 0.4% (t with 3 df) and 0.75% (a 10% event). ``benchmarks/sequential_check.py`` measures the
  family-wise error with looks every 100 answers.
- **Verdicts**: ``gap`` when the interval excludes 0 (its sign says which side), ``no gap above the margin``
  when the interval lies inside (−margin, +margin), else ``undecided``. Both are errors controlled by the
  same coverage: a wrong ``gap`` needs the true gap outside the interval as much as a wrong "no gap above".
- **The last look** (the full design) need not be anytime-valid: it uses the fixed design's t-interval at what
  is left of α (:func:`final_interval`), so stopping early costs little power at the full size (α is split:
  ``interim_alpha`` for all the looks before, the rest for the last; the union bound keeps the family's
  error ≤ α).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from counterbench.stats.distributions import norm_ppf, t_ppf

__all__ = [
    "GAP",
    "MIN_INFORMATIVE",
    "MIN_SLOTS",
    "NO_GAP",
    "UNDECIDED",
    "Interval",
    "final_interval",
    "mixture_rho",
    "sequence_interval",
    "verdict",
]

#: the fewest slots a verdict is read from (the boundary is asymptotic)
MIN_SLOTS = 10
#: the fewest slots whose gap differs from the most common one, for a verdict
MIN_INFORMATIVE = 10
GAP = "gap"
NO_GAP = "no gap above the margin"
UNDECIDED = "undecided"


@dataclass(frozen=True)
class Interval:
    """The mean gap of ``n`` slots and its interval; ``informative``: slots whose gap differs from the most
    common gap."""

    n: int
    mean: float
    low: float
    high: float
    informative: int = 0


def mixture_rho(alpha: float, t_opt: float) -> float:
    """The normal mixture's width that makes the boundary tightest at ``t_opt`` slots."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    log_term = -2.0 * math.log(alpha)
    return math.sqrt((log_term + math.log(log_term + 1.0)) / max(1.0, float(t_opt)))


def _moments(gaps: npt.ArrayLike) -> tuple[int, float, float, int]:
    x = np.asarray(gaps, dtype=np.float64)
    x = x[np.isfinite(x)]
    n = len(x)
    if n == 0:
        return 0, math.nan, math.nan, 0
    sd = float(np.std(x, ddof=1)) if n > 1 else math.nan
    informative = n - int(np.unique(x, return_counts=True)[1].max())
    return n, float(np.mean(x)), sd, informative


def sequence_interval(gaps: npt.ArrayLike, alpha: float, t_opt: float) -> Interval:
    """The (1 − α) asymptotic confidence sequence's interval after the slots ``gaps`` (NaN gaps dropped).

    Valid at every sample size at once (asymptotically): it may be read after every batch of slots."""
    n, mean, sd, informative = _moments(gaps)
    if n < 2:
        return Interval(n, mean, -math.inf, math.inf, informative)
    rho2 = mixture_rho(alpha, t_opt) ** 2
    spread = 2.0 * (n * rho2 + 1.0) / (n * n * rho2) * math.log(math.sqrt(n * rho2 + 1.0) / alpha)
    radius = sd * _student(alpha, n) * math.sqrt(spread)
    return Interval(n, mean, mean - radius, mean + radius, informative)


@lru_cache(maxsize=4096)
def _student(alpha: float, n: int) -> float:
    """How much wider Student's t (``n − 1`` df) is than the normal at the two-sided level ``alpha``: the
    boundary's normal approximation takes ``σ̂`` as known, which at 10–30 slots and a family's small α makes
    its tails several times too thin; the ratio brings them to the t-test's."""
    return float(t_ppf(1.0 - alpha / 2.0, n - 1) / norm_ppf(1.0 - alpha / 2.0))


def final_interval(gaps: npt.ArrayLike, alpha: float) -> Interval:
    """The fixed design's (1 − α) t-interval (``n − 1`` degrees of freedom) of the mean gap, for the last look."""
    n, mean, sd, informative = _moments(gaps)
    if n < 2:
        return Interval(n, mean, -math.inf, math.inf, informative)
    radius = float(t_ppf(1.0 - alpha / 2.0, n - 1)) * sd / math.sqrt(n)
    return Interval(n, mean, mean - radius, mean + radius, informative)


def verdict(interval: Interval, margin: float, min_slots: int = MIN_SLOTS, min_informative: int = MIN_INFORMATIVE
            ) -> str:
    """``gap``, ``no gap above the margin`` or ``undecided`` from an interval (see the module's decisions); the
    last look passes ``min_informative=0`` (the fixed design's interval needs no warm-up)."""
    bounded = math.isfinite(interval.low) and math.isfinite(interval.high)
    if interval.n < min_slots or interval.informative < min_informative or not bounded:
        return UNDECIDED
    if interval.low > 0 or interval.high < 0:
        return GAP
    if -margin < interval.low and interval.high < margin:
        return NO_GAP
    return UNDECIDED
