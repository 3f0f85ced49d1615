"""Slot intervals, p-values, families of marks and the too-little-data words (stats.inference)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from counterbench.stats.cluster_bootstrap import cluster_weights
from counterbench.stats.inference import (
    MIN_SLOTS,
    effective_slots,
    family_marks,
    slot_interval,
    slot_t_pvalue,
    too_few_text,
)


def test_slot_interval_is_the_t_interval_when_the_bootstrap_se_is_exact() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(3.0, 2.0, 12)
    reps = x[rng.integers(0, x.size, (20000, x.size))].mean(axis=1)
    low, high = slot_interval(x.mean(), reps[None, :], x.size)
    t_low, t_high = stats.t.interval(0.95, x.size - 1, loc=x.mean(), scale=stats.sem(x))
    assert low[0] == pytest.approx(t_low, rel=0.02) and high[0] == pytest.approx(t_high, rel=0.02)
    p = slot_t_pvalue(x.mean(), reps[None, :], x.size)[0]
    assert p == pytest.approx(stats.ttest_1samp(x, 0.0).pvalue, rel=0.1)


def test_interval_excludes_zero_exactly_when_p_is_below_five_percent() -> None:
    rng = np.random.default_rng(2)
    for shift in np.linspace(0.0, 1.5, 16):
        x = rng.normal(shift, 1.0, 8)
        reps = (cluster_weights(rng, 8, 500) @ x[:, None])[:, 0] / 8
        low, high = slot_interval(x.mean(), reps[None, :], 8)
        p = slot_t_pvalue(x.mean(), reps[None, :], 8)[0]
        assert (low[0] > 0 or high[0] < 0) == (p < 0.05)


def test_fewer_than_two_slots_per_group_have_no_interval() -> None:
    reps = np.array([[1.0, 2.0, 3.0]])
    assert np.isnan(slot_interval(2.0, reps, 1)).all()
    assert np.isnan(slot_interval(2.0, reps, 5, n_groups=5)).all()  # one slot per group
    assert np.isfinite(slot_interval(2.0, reps, 10, n_groups=5)).all()
    assert np.isnan(slot_t_pvalue(2.0, reps, 1)).all()


def test_few_slots_widen_the_interval() -> None:
    reps = np.random.default_rng(3).normal(0, 1, (1, 4000))
    widths = [float(np.diff(np.ravel(slot_interval(0.0, reps, n)))[0]) for n in (3, 10, 1000)]
    assert widths[0] > widths[1] > widths[2]
    assert widths[2] == pytest.approx(2 * 1.96, rel=0.05)


def test_effective_slots() -> None:
    assert effective_slots([1, 1, 1, 1]) == 4
    assert effective_slots([1, 0, 0, 0]) == 1
    assert 1 < effective_slots([24, 5.5]) < 2


def test_marks_are_corrected_within_each_model_and_skip_untestable_rows() -> None:
    frame = pd.DataFrame({"model": ["a"] * 4 + ["b"] * 2, "p_value": [0.01, 0.02, 0.03, 0.5, 0.04, 0.01],
                          "n_slots": [10, 10, 10, 10, 10, 2]})
    q, marks = family_marks(frame, testable=frame["n_slots"] >= MIN_SLOTS)
    assert np.allclose(q[:4], [0.04, 0.04, 0.04, 0.5])  # BH over a's four rows
    assert q[4] == pytest.approx(0.04) and np.isnan(q[5])  # b's second row is not tested
    assert marks.tolist() == [True, True, True, False, True, False]


def test_too_few_words() -> None:
    assert too_few_text(2) == "too few matched prompts to test (n = 2)"
    assert too_few_text(float("nan")) == "too few matched prompts to test (n = 0)"
