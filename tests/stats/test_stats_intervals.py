"""Wilson and percentile intervals (spec §3: Violation@τ with Wilson and bootstrap CIs)."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from counterbench.stats import percentile_interval, wilson_interval


def test_wilson_hand_worked() -> None:
    # k = 5, n = 10, z = 1.959964: p = 0.5, denom = 1 + z²/n = 1.384146,
    # centre = (0.5 + z²/20) / denom = 0.5,
    # half = z·√(0.025 + z²/400) / denom = 1.959964 · 0.186020 / 1.384146 = 0.263407
    low, high = wilson_interval(5, 10)
    assert float(low) == pytest.approx(0.5 - 0.263407, abs=1e-6)
    assert float(high) == pytest.approx(0.5 + 0.263407, abs=1e-6)


@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_wilson_matches_statsmodels(confidence: float) -> None:
    k = np.array([0, 1, 3, 17, 50, 99, 100, 0, 7, 191_700])
    n = np.array([10, 10, 10, 40, 100, 100, 100, 1, 7, 383_400])
    low, high = wilson_interval(k, n, confidence)
    ref_low, ref_high = proportion_confint(k, n, alpha=1 - confidence, method="wilson")
    np.testing.assert_allclose(low, ref_low, rtol=0, atol=1e-12)
    np.testing.assert_allclose(high, ref_high, rtol=0, atol=1e-12)
    assert np.isnan(wilson_interval(0, 0)[0])


def test_percentile_interval() -> None:
    reps = np.random.default_rng(0).normal(size=1001)
    low, high = percentile_interval(np.append(reps, np.nan), 0.9)
    assert (float(low), float(high)) == pytest.approx(tuple(np.quantile(reps, [0.05, 0.95])), abs=1e-12)
    assert np.isnan(percentile_interval([np.nan, np.nan])[0])
    with pytest.raises(ValueError):
        percentile_interval(reps, 0.0)
