"""Slot intervals, p-values, families of marks and the too-little-data words (stats.inference)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from counterbench.stats.cluster_bootstrap import cluster_weights
from counterbench.stats.inference import (
    MIN_SLOTS,
    MIN_SLOTS_INTERVAL,
    effective_slots,
    family_marks,
    slot_design,
    slot_interval,
    slot_proportion_interval,
    slot_t_pvalue,
    too_few_for_interval,
    too_few_text,
)
from counterbench.stats.intervals import wilson_interval


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


def test_fewer_slots_per_group_than_the_calibration_supports_have_no_interval() -> None:
    reps = np.array([[1.0, 2.0, 3.0]])
    assert MIN_SLOTS_INTERVAL == 3
    assert np.isnan(slot_interval(2.0, reps, 1)).all()
    assert np.isnan(slot_interval(2.0, reps, 2)).all()
    assert np.isnan(slot_interval(2.0, reps, 5, n_groups=5)).all()  # one slot per group
    # 2 slots per use case (the old quick preset's 10 slots in 5 use cases): no interval either
    assert np.isnan(slot_interval(2.0, reps, 10, n_groups=5)).all()
    assert np.isfinite(slot_interval(2.0, reps, 15, n_groups=5)).all()
    assert np.isfinite(slot_interval(2.0, reps, 3)).all()
    # the variance factor and df of slot_design do not lift the rule: the slots are still too few
    assert np.isnan(slot_interval(2.0, reps, 2, factor=2.0, df=1.0)).all()
    assert too_few_for_interval([2, 3, 14, 15], 5).tolist() == [True, True, True, False]
    assert np.isnan(slot_proportion_interval(50.0, np.array([[40.0, 50.0, 60.0]]), 100, 2)).all()
    assert np.isfinite(slot_proportion_interval(50.0, np.array([[40.0, 50.0, 60.0]]), 100, 3)).all()
    assert np.isnan(slot_t_pvalue(2.0, reps, 1)).all()


def test_a_quantity_that_cannot_be_negative_gets_no_negative_bound() -> None:
    rng = np.random.default_rng(4)
    reps = rng.normal(1.0, 3.0, (1, 4000))  # a small mean |gap| with a wide spread
    low, high = slot_interval(1.0, reps, 4)
    assert low[0] < 0  # the symmetric interval would go below 0
    cut_low, cut_high = slot_interval(1.0, reps, 4, lower=0.0)
    assert cut_low[0] == 0.0 and cut_high[0] == high[0]
    far = rng.normal(50.0, 1.0, (1, 4000))  # far from 0: the cut changes nothing
    assert np.array_equal(np.ravel(slot_interval(50.0, far, 10, lower=0.0)), np.ravel(slot_interval(50.0, far, 10)))
    assert np.isnan(slot_interval(1.0, reps, 2, lower=0.0)).all()  # too few slots: still none


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


def _design_by_matrices(w: np.ndarray, groups: np.ndarray, shares: np.ndarray) -> tuple[float, float]:
    """Independent computation of slot_design: build M = Σ_g P_g' diag(a_g²) P_g explicitly."""
    var = tr_m = tr_m2 = 0.0
    for g in np.unique(groups):
        b = w[groups == g] / w[groups == g].sum()
        a2 = (shares[g] / shares.sum() * b) ** 2
        proj = np.eye(b.size) - np.outer(np.ones(b.size), b)  # residuals e = P y
        m = proj.T @ np.diag(a2) @ proj
        var, tr_m, tr_m2 = var + a2.sum(), tr_m + np.trace(m), tr_m2 + np.trace(m @ m)
    return var / tr_m, tr_m**2 / tr_m2


def test_slot_design_equal_weights_is_the_n_minus_one_rule() -> None:
    assert slot_design(np.ones(12)) == pytest.approx((12 / 11, 11))
    assert slot_design(np.ones(30), np.repeat(np.arange(3), 10)) == pytest.approx((10 / 9, 27))
    assert np.isnan(slot_design([1.0])).all() and np.isnan(slot_design([1.0, 3.0])).all()  # < 2 effective slots
    assert slot_design([2.0, 2.0]) == pytest.approx((2.0, 1.0))


def test_slot_design_matches_its_matrix_definition() -> None:
    rng = np.random.default_rng(4)
    w = rng.lognormal(0.0, 1.0, 40)
    groups = np.repeat(np.arange(4), [5, 10, 15, 10])
    shares = np.array([0.1, 0.2, 0.3, 0.4])
    assert slot_design(w, groups, shares) == pytest.approx(_design_by_matrices(w, groups, shares), rel=1e-10)
    assert slot_design(w) == pytest.approx(_design_by_matrices(w, np.zeros(40, int), np.ones(1)), rel=1e-10)


def test_slot_design_gives_the_variance_and_degrees_of_freedom_of_the_sandwich() -> None:
    """Weighted means of normal slots: factor × E[V̂] is the variance, and V̂ has the stated df."""
    rng = np.random.default_rng(5)
    w = rng.lognormal(0.0, 1.2, 30)
    a = w / w.sum()
    y = rng.standard_normal((40000, w.size))
    resid = y - (y @ a)[:, None]
    v_hat = (resid**2) @ (a**2)
    factor, df = slot_design(w)
    assert factor * v_hat.mean() == pytest.approx((a**2).sum(), rel=0.02)
    assert 2 * v_hat.mean() ** 2 / v_hat.var() == pytest.approx(df, rel=0.1)
    assert df < effective_slots(w) - 1  # Kish's count overstates the degrees of freedom


def test_weighted_t_test_keeps_its_size_in_the_far_tail() -> None:
    """Counter-offer-like levels (×36 from the smallest to the largest): at α = 0.005 the t-test with
    slot_design's df rejects at most at its level (Satterthwaite's df errs on the safe side: 0.66 α
    here); with Kish's effective count − 1 it rejects more often than α (1.24 α)."""
    rng = np.random.default_rng(6)
    w = np.repeat(np.geomspace(6.0, 218.0, 27), 2)
    a = w / w.sum()
    y = rng.standard_normal((60000, w.size))
    est = y @ a
    se = np.sqrt(((y - est[:, None]) ** 2) @ (a**2))
    factor, df = slot_design(w)
    t = np.abs(est) / (se * np.sqrt(factor))
    alpha = 0.005
    new = float(np.mean(2 * stats.t.sf(t, df) < alpha))
    n_eff = effective_slots(w)
    kish = float(np.mean(2 * stats.t.sf(np.abs(est) / (se * np.sqrt(n_eff / (n_eff - 1))), n_eff - 1) < alpha))
    assert 0.4 * alpha < new <= alpha
    assert kish > 1.15 * alpha


def test_proportion_interval_with_no_violation_is_wilson_on_the_pairs() -> None:
    reps = np.zeros((1, 500))
    low, high = slot_proportion_interval(0.0, reps, 100, 15, 5)
    t = stats.t.isf(0.025, 10)
    assert low[0] == 0.0 and high[0] == pytest.approx(100 * t * t / (100 + t * t))
    _, w_high = wilson_interval(0, 100)
    assert high[0] > 100 * w_high  # t with 10 df, not z


def test_proportion_interval_is_the_slot_interval_with_many_slots() -> None:
    rng = np.random.default_rng(7)
    reps = rng.normal(20.0, 1.0, (1, 4000))
    low, high = slot_proportion_interval(20.0, reps, 50000, 1000)
    s_low, s_high = slot_interval(20.0, reps, 1000)
    assert low[0] == pytest.approx(s_low[0], abs=0.15) and high[0] == pytest.approx(s_high[0], abs=0.15)
    assert np.isnan(slot_proportion_interval(20.0, reps, 50, 1)).all()  # one slot: no interval
