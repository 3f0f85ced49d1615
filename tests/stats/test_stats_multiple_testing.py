"""Fisher's method and Benjamini–Hochberg (paper §4.2, App. A.2; spec §3)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from counterbench.stats import benjamini_hochberg, fisher_combine


def test_fisher_hand_worked_and_scipy() -> None:
    # p = (0.05, 0.05): X = −2 · 2 · ln 0.05 = 11.98293; χ²₄ survival = e^{−X/2} (1 + X/2) = 0.017479
    stat, p = fisher_combine([0.05, 0.05, np.nan])
    assert stat == pytest.approx(-4 * np.log(0.05), abs=1e-12)
    assert p == pytest.approx(0.0025 * (1 - 2 * np.log(0.05)), abs=1e-12)
    rng = np.random.default_rng(0)
    for _ in range(5):
        ps = rng.uniform(0.0001, 1, int(rng.integers(1, 12)))
        ref = stats.combine_pvalues(ps, method="fisher")
        assert fisher_combine(ps) == pytest.approx((ref.statistic, ref.pvalue), rel=1e-12, abs=1e-15)
    assert fisher_combine([0.0, 0.5])[1] == 0.0
    assert np.isnan(fisher_combine([np.nan])[1])
    with pytest.raises(ValueError):
        fisher_combine([1.5])


def test_bh_hand_worked() -> None:
    # sorted p = .01, .03, .04, .20 (m = 4); p·m/rank = .04, .06, .0533, .20;
    # running minimum from the top = .04, .0533, .0533, .20
    adjusted, reject = benjamini_hochberg([0.01, 0.04, 0.03, 0.20])
    np.testing.assert_allclose(adjusted, [0.04, 0.16 / 3, 0.16 / 3, 0.20], atol=1e-12)
    assert list(reject) == [True, False, False, False]


@pytest.mark.parametrize("seed", range(5))
def test_bh_matches_statsmodels(seed: int) -> None:
    rng = np.random.default_rng(seed)
    p = np.round(rng.beta(0.3, 2, 60), 3)  # ties included
    adjusted, reject = benjamini_hochberg(p, alpha=0.1)
    ref_reject, ref_adj, _, _ = multipletests(p, alpha=0.1, method="fdr_bh")
    np.testing.assert_allclose(adjusted, ref_adj, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(reject, ref_reject)


def test_bh_keeps_nan_and_shape() -> None:
    p = np.array([[0.01, np.nan], [0.04, 0.03]])
    adjusted, reject = benjamini_hochberg(p)
    assert adjusted.shape == (2, 2) and np.isnan(adjusted[0, 1]) and not reject[0, 1]
    ref = multipletests([0.01, 0.04, 0.03], method="fdr_bh")[1]
    np.testing.assert_allclose(adjusted[~np.isnan(p)], ref, atol=1e-12)
