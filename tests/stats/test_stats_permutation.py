"""The unmatched-groups permutation test and the swap test's fewest testable size, against scipy."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from counterbench.stats.inference import too_few_text
from counterbench.stats.swap_test import LabelPermutationTest, SwapTest, fewest_testable


def _exact_welch_permutation_p(a: np.ndarray, b: np.ndarray) -> float:
    """Every relabelling enumerated, Welch's t from scipy: the exact p the random relabellings estimate."""
    pooled = np.concatenate([a, b])
    observed = abs(stats.ttest_ind(a, b, equal_var=False).statistic)
    hits = total = 0
    for chosen in itertools.combinations(range(pooled.size), a.size):
        mask = np.zeros(pooled.size, dtype=bool)
        mask[list(chosen)] = True
        t = stats.ttest_ind(pooled[mask], pooled[~mask], equal_var=False).statistic
        hits += int(abs(t) >= observed * (1 - 1e-9))
        total += 1
    return hits / total


@pytest.mark.parametrize("sizes", [(4, 5), (3, 7), (6, 6)])
def test_random_relabellings_estimate_the_exact_permutation_p(sizes: tuple[int, int]) -> None:
    rng = np.random.default_rng(sum(sizes))
    a, b = rng.normal(0.8, 1.0, sizes[0]), rng.normal(0.0, 2.0, sizes[1])
    exact = _exact_welch_permutation_p(a, b)
    got = LabelPermutationTest(seed=1, n_perm=20_000).pvalue(a, b)
    assert got == pytest.approx(exact, abs=4 * np.sqrt(exact * (1 - exact) / 20_000) + 1e-4)


def test_null_p_values_are_uniform_with_unequal_groups_and_discrete_answers() -> None:
    """Rounded answers and 4 vs 30 units: the share of p ≤ α stays at or below α (Welch's p does not at small α)."""
    rng = np.random.default_rng(3)
    tester = LabelPermutationTest(seed=2, n_perm=999)
    p = np.array([tester.pvalue(np.round(rng.lognormal(0, 0.4, 4) * 3), np.round(rng.lognormal(0, 0.4, 30) * 3))
                  for _ in range(1500)])
    p = p[np.isfinite(p)]
    assert len(p) > 1400
    for alpha in (0.05, 0.2):
        assert np.mean(p <= alpha) <= alpha + 3 * np.sqrt(alpha * (1 - alpha) / len(p))
    assert np.mean(p <= 0.5) >= 0.44  # not degenerate either


def test_degenerate_inputs_give_nan_and_relabellings_are_shared_per_size() -> None:
    tester = LabelPermutationTest(seed=0, n_perm=99)
    assert np.isnan(tester.pvalue([1.0], [1.0, 2.0]))
    assert np.isnan(tester.pvalue([2.0, 2.0], [2.0, 2.0]))  # t undefined
    first = tester.selections(3, 4)
    assert first is tester.selections(3, 4) and first.shape == (99, 7) and (first.sum(axis=1) == 3).all()


def test_fewest_testable_is_where_the_exact_swap_test_can_reach_alpha() -> None:
    n = fewest_testable(0.05)
    assert n == 6
    tester = SwapTest(seed=0)
    assert tester.pvalue_of_sum(np.ones(n)) <= 0.05 < tester.pvalue_of_sum(np.ones(n - 1))
    assert too_few_text(3, "jobs") == "too few jobs to test (n = 3)"
