"""Spearman ρ, single and pairwise (paper §6 Fig. 5, App. B, App. D)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from counterbench.stats import mean_pairwise_spearman, min_pairwise_spearman, pairwise_spearman, spearman


def test_hand_worked() -> None:
    # ranks x = 1..4, y = 2, 1, 3, 4: d² = 1 + 1 + 0 + 0 = 2, ρ = 1 − 6·2 / (4·15) = 0.8
    rho, _ = spearman([1, 2, 3, 4], [20, 10, 30, 40])
    assert rho == pytest.approx(0.8, abs=1e-12)
    # columns a = b = (1, 2, 3), c reversed: ρ(a,b) = 1, ρ(a,c) = ρ(b,c) = −1 → min −1, mean −1/3
    m = np.array([[1, 1, 3], [2, 2, 2], [3, 3, 1]], dtype=float)
    assert min_pairwise_spearman(m) == pytest.approx(-1.0)
    assert mean_pairwise_spearman(m) == pytest.approx(-1 / 3)


@pytest.mark.parametrize("seed", range(6))
def test_matches_scipy_with_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 40))
    x = rng.integers(0, 5, n).astype(float)
    y = x + rng.integers(-2, 3, n)
    rho, p = spearman(x, y)
    ref = stats.spearmanr(x, y)
    assert rho == pytest.approx(ref.statistic, abs=1e-12)
    assert p == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-15)
    matrix = rng.integers(0, 6, size=(n, 5)).astype(float)
    ref_m = stats.spearmanr(matrix).statistic
    np.testing.assert_allclose(pairwise_spearman(matrix, axis=0), ref_m, atol=1e-12)
    np.testing.assert_allclose(pairwise_spearman(matrix.T, axis=1), ref_m, atol=1e-12)


def test_nan_and_constant_inputs() -> None:
    rho, p = spearman([1, 2, np.nan, 4, 5], [2, 1, 3, 5, 4])
    ref = stats.spearmanr([1, 2, 4, 5], [2, 1, 5, 4])
    assert (rho, p) == pytest.approx((ref.statistic, ref.pvalue), abs=1e-12)
    assert np.isnan(spearman([1, 1, 1], [1, 2, 3])[0])
    assert spearman([1, 2, 3], [3, 2, 1]) == (-1.0, 0.0)
    m = np.array([[1, 5, 2], [1, 6, 3], [1, 7, 1]], dtype=float)  # first column constant
    assert np.isnan(min_pairwise_spearman(m))
    assert mean_pairwise_spearman(m) == pytest.approx(stats.spearmanr(m[:, 1], m[:, 2]).statistic)
    with pytest.raises(ValueError):
        pairwise_spearman(np.array([[1.0, np.nan], [2.0, 3.0]]))
