"""Friedman χ² with tie correction and Kendall's W (paper §4.2, App. A.2; spec §3)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from counterbench.stats import friedman_kendall_w, friedman_kendall_w_stacked, kendalls_w


def brute_force_w(matrix: np.ndarray) -> float:
    """Textbook tie-corrected Kendall's W: m raters (rows) rank n objects (columns)."""
    m, n = matrix.shape
    ranks = np.array([stats.rankdata(row) for row in matrix])
    r = ranks.sum(axis=0)
    s = ((r - r.mean()) ** 2).sum()
    t = 0.0
    for row in matrix:
        _, counts = np.unique(row, return_counts=True)
        t += float((counts**3 - counts).sum())
    return float(12 * s / (m**2 * (n**3 - n) - m * t))


def test_hand_worked_perfect_concordance() -> None:
    # 3 blocks all rank the 3 treatments 1, 2, 3: rank sums R = 3, 6, 9, ΣR² = 126,
    # χ² = 12 / (n k (k+1)) ΣR² − 3 n (k+1) = 12/36 · 126 − 36 = 6, W = 6 / (3 · 2) = 1,
    # p = P(χ²₂ > 6) = exp(−3) = 0.049787
    res = friedman_kendall_w([[10, 20, 30], [1, 2, 3], [5, 6, 7]])
    assert res.statistic == pytest.approx(6.0, abs=1e-12)
    assert res.kendalls_w == pytest.approx(1.0, abs=1e-12)
    assert res.pvalue == pytest.approx(np.exp(-3.0), abs=1e-12)
    assert (res.n_blocks, res.n_treatments, res.fully_tied) == (3, 3, False)


@pytest.mark.parametrize("seed", range(8))
def test_matches_scipy_and_textbook_with_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(3, 20)), int(rng.integers(3, 12))
    matrix = rng.integers(0, 4, size=(n, k)).astype(float)  # many ties
    matrix[0] = 1.0  # one fully tied block
    ref = stats.friedmanchisquare(*matrix.T)
    res = friedman_kendall_w(matrix)
    assert res.statistic == pytest.approx(ref.statistic, rel=1e-12, abs=1e-9)
    assert res.pvalue == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-12)
    assert res.kendalls_w == pytest.approx(ref.statistic / (n * (k - 1)), rel=1e-12, abs=1e-12)
    assert res.kendalls_w == pytest.approx(brute_force_w(matrix), rel=1e-9, abs=1e-12)


def test_two_treatments_and_stacked_form() -> None:
    rng = np.random.default_rng(5)
    stack = rng.normal(size=(6, 9, 4)).round(1)
    chi2, p, w, tied = friedman_kendall_w_stacked(stack)
    for i in range(6):
        one = friedman_kendall_w(stack[i])
        assert (chi2[i], p[i], w[i]) == pytest.approx((one.statistic, one.pvalue, one.kendalls_w), abs=1e-12)
    assert not tied.any()
    two = rng.normal(size=(10, 2))
    assert kendalls_w(two) == pytest.approx(brute_force_w(two), abs=1e-12)
    with pytest.raises(ValueError):
        friedman_kendall_w_stacked(np.full((2, 3, 3), np.nan))


def test_fully_tied_matrix_and_missing_rows() -> None:
    # every identifier gets the same answer in every profile: W = 0, p = 1, counted (spec §3)
    tied = np.full((5, 4), 7.0)
    res = friedman_kendall_w(tied)
    assert (res.kendalls_w, res.pvalue, res.statistic, res.fully_tied) == (0.0, 1.0, 0.0, True)
    dropped = friedman_kendall_w(tied, fully_tied="drop")  # rupeebias-v1 drops such cells
    assert np.isnan(dropped.kendalls_w) and np.isnan(dropped.pvalue) and dropped.fully_tied
    # a row with a gap is dropped (profiles with a gap are dropped)
    with_gap = np.array([[1, 2, 3], [1, np.nan, 3], [2, 3, 4], [3, 4, 5]], dtype=float)
    res = friedman_kendall_w(with_gap)
    assert res.n_blocks == 3 and res.kendalls_w == pytest.approx(1.0)
    assert np.isnan(friedman_kendall_w([[1.0, 2.0]]).kendalls_w)
    with pytest.raises(ValueError):
        friedman_kendall_w(tied, fully_tied="skip")  # type: ignore[arg-type]
