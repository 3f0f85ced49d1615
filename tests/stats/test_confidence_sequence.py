"""The confidence sequence behind ``--stop-when decided``: valid under continuous monitoring, powerful enough,
and the check itself can fail (a fixed interval read at every look crosses far more often)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sstats

from counterbench.stats.confidence_sequence import (
    GAP,
    NO_GAP,
    UNDECIDED,
    Interval,
    final_interval,
    mixture_rho,
    sequence_interval,
    verdict,
)

LOOKS = range(10, 151, 5)


def _crosses(x: np.ndarray, alpha: float, reader: str) -> bool:
    for t in LOOKS:
        seen = x[:t]
        interval = sequence_interval(seen, alpha, t_opt=50) if reader == "sequence" else final_interval(seen, alpha)
        if verdict(interval, margin=1e-9) == GAP:
            return True
    return False


@pytest.mark.parametrize("law", ["normal", "t3", "rare"])
def test_null_gaps_cross_zero_at_most_alpha_over_every_look(law: str) -> None:
    """2,000 null streams of 150 slots, read every 5 slots from 10: any look's "gap" in at most α (here 0.05;
    the Wilson upper bound of the observed rate stays under 0.05 + its sampling error)."""
    rng = np.random.default_rng(7)
    alpha, reps = 0.05, 2000
    hits = 0
    for _ in range(reps):
        if law == "normal":
            x = rng.normal(0, 1, 150)
        elif law == "t3":
            x = rng.standard_t(3, 150)
        else:  # a yes/no gap: mostly 0, a difference in 10% of slots either way
            x = (rng.binomial(1, 0.1, 150) - rng.binomial(1, 0.1, 150)) * 100.0
        hits += _crosses(x, alpha, "sequence")
    assert hits / reps <= alpha + 2.5 * math.sqrt(alpha * (1 - alpha) / reps)


def test_the_check_can_fail_a_fixed_interval_read_at_every_look_crosses_too_often() -> None:
    rng = np.random.default_rng(8)
    reps = 1000
    hits = sum(_crosses(rng.normal(0, 1, 150), 0.05, "fixed") for _ in range(reps))
    assert hits / reps > 0.12  # optional stopping on a fixed interval: far above its nominal 5%


def test_a_real_gap_is_found_and_a_null_one_ruled_out_within_the_margin() -> None:
    rng = np.random.default_rng(9)
    found = sum(verdict(sequence_interval(rng.normal(1.0, 1.0, 60), 0.01, 50), 0.5) == GAP for _ in range(200))
    assert found >= 190
    within = [verdict(sequence_interval(rng.normal(0.0, 1.0, 400), 0.01, 130), 0.5) for _ in range(200)]
    assert within.count(NO_GAP) >= 180 and GAP not in within[:20]


def test_no_verdict_from_too_few_or_uninformative_slots() -> None:
    assert verdict(sequence_interval(np.full(9, 5.0) + np.arange(9), 0.05, 10), 1.0) == UNDECIDED  # < 10 slots
    zeros = sequence_interval(np.zeros(40), 0.05, 20)  # a yes/no gap that never differs: σ̂ = 0
    assert zeros.informative == 0 and verdict(zeros, 5.0) == UNDECIDED
    assert verdict(Interval(30, 1.0, -math.inf, math.inf, 30), 5.0) == UNDECIDED


def test_the_last_look_is_the_fixed_t_interval() -> None:
    x = np.random.default_rng(3).normal(0.4, 1.0, 25)
    got = final_interval(x, 0.04)
    half = sstats.t.ppf(0.98, 24) * x.std(ddof=1) / math.sqrt(25)
    assert got.low == pytest.approx(x.mean() - half, abs=1e-12)
    assert got.high == pytest.approx(x.mean() + half, abs=1e-12)
    assert verdict(got, 5.0, min_slots=6, min_informative=0) in (GAP, NO_GAP)


def test_the_boundary_is_tightest_near_t_opt_and_wider_than_a_fixed_interval() -> None:
    x = np.random.default_rng(4).normal(0, 1, 100)
    widths = {t_opt: sequence_interval(x, 0.05, t_opt).high - sequence_interval(x, 0.05, t_opt).low
              for t_opt in (10, 100, 1000)}
    assert widths[100] < widths[10] and widths[100] < widths[1000]
    fixed = final_interval(x, 0.05)
    assert widths[100] > fixed.high - fixed.low
    with pytest.raises(ValueError):
        mixture_rho(1.5, 10)
