"""The swap test: exact under exchangeability whatever the answers' law, never below its resolution."""

from __future__ import annotations

import numpy as np
import pytest

from counterbench.stats.gaps import relative_gap
from counterbench.stats.inference import MIN_SLOTS
from counterbench.stats.swap_test import DEFAULT_SWAPS, SwapTest, attainable_level

LEVELS = np.array([24, 20, 15, 22, 18, 13, 17, 14, 10, 9, 7.5, 5.5, 11, 9, 7, 11.5, 9.5, 7.0]) * 1e5


def _gap(t: np.ndarray) -> np.ndarray:
    return relative_gap(t[:, 0], t[:, 1], signed=True)


def _null_pvalues(n: int, sims: int, rng: np.random.Generator, *, tail_df: float | None = None) -> np.ndarray:
    """p of the canonical pair gap of sums, two identities with no difference, salary-like levels."""
    test = SwapTest(seed=int(rng.integers(1 << 30)))
    b = LEVELS[np.arange(n) % LEVELS.size]
    out = np.empty(sims)
    for i in range(sims):
        z = rng.standard_normal((2, n)) if tail_df is None else rng.standard_t(tail_df, (2, n))
        r, c = np.round(b * np.exp(0.03 * z[0]) / 1e5) * 1e5, np.round(b * np.exp(0.03 * z[1]) / 1e5) * 1e5
        out[i] = test.pvalue(np.column_stack([r, c]), np.column_stack([c, r]), _gap)
    return out


@pytest.mark.parametrize(("n", "tail_df"), [(8, None), (10, 2.0), (30, None), (30, 2.0)])
def test_null_rejections_never_exceed_the_level(n: int, tail_df: float | None) -> None:
    """Whole-lakh answers (many ties), unequal levels, normal or Student-t(2) noise: at every level the
    share of p ≤ level stays at or below it (2,000 draws; the bound allows 3 Monte Carlo SEs)."""
    p = _null_pvalues(n, 2000, np.random.default_rng(n + int(tail_df or 0)), tail_df=tail_df)
    for level in (0.01, 0.05, 0.2):
        se = np.sqrt(level * (1 - level) / p.size)
        assert (p <= level).mean() <= level + 3 * se, (level, (p <= level).mean())
    assert (p <= 0.5).mean() > 0.3  # not degenerate: p spreads over [0, 1]


def test_exact_enumeration_and_resolution() -> None:
    test = SwapTest(seed=1)
    d = np.array([5.0, 4.0, 3.0, 2.0, 1.0, 0.5])  # every slot the same way: the most extreme arrangement
    assert test.pvalue_of_sum(d) == pytest.approx(2 / 2**6)  # itself and its mirror of 64
    assert test.pvalue_of_sum(np.array([1.0, -1.0])) == 1.0  # 0 is never evidence
    assert test.pvalue_of_sum(np.array([])) != test.pvalue_of_sum(np.array([]))  # NaN: nothing to test
    big = np.linspace(1, 2, 40)
    assert test.pvalue_of_sum(big) == pytest.approx(1 / (1 + DEFAULT_SWAPS))  # (1 + 0) / (1 + B), never 0
    assert attainable_level(5, 0.05) == 0.0 and attainable_level(MIN_SLOTS, 0.05) == pytest.approx(2 / 64)
    assert attainable_level(10, 0.05 / 6) == pytest.approx(8 / 1024)
    assert attainable_level(40, 0.01) == pytest.approx(100 / (1 + DEFAULT_SWAPS))


def test_a_real_gap_is_found_and_results_repeat() -> None:
    rng = np.random.default_rng(3)
    b = LEVELS
    r, c = b * 1.05 * np.exp(0.03 * rng.standard_normal(b.size)), b * 0.95 * np.exp(0.03 * rng.standard_normal(b.size))
    first, second = np.column_stack([r, c]), np.column_stack([c, r])
    p = SwapTest(seed=9).pvalue(first, second, _gap)
    assert p < 0.001 and p == SwapTest(seed=9).pvalue(first, second, _gap)
    with pytest.raises(ValueError, match="shape"):
        SwapTest(seed=9).pvalue(first, second[:3], _gap)


def test_shared_arrangements_do_not_depend_on_the_order_of_tests() -> None:
    one, two = SwapTest(seed=4), SwapTest(seed=4)
    one.arrangements(20)
    assert np.array_equal(one.arrangements(30)[0], two.arrangements(30)[0])
    assert np.array_equal(one.arrangements(20)[0], two.arrangements(30)[0][:, :20])


def test_many_slots_use_bounded_memory_and_the_same_arrangements() -> None:
    """Past the kept blocks, arrangements are drawn again rather than kept: same p, bounded cache."""
    rng = np.random.default_rng(8)
    d = rng.standard_normal(1500) + 0.05
    test = SwapTest(seed=2)
    p = test.pvalue_of_sum(d)
    assert len(test._blocks) == 8  # 512 slots kept, the other 988 drawn when needed
    assert p == SwapTest(seed=2).pvalue_of_sum(d)
    swaps, exact = SwapTest(seed=2).arrangements(1500)
    observed, extreme = d.sum(), np.abs(d.sum() - 2.0 * (swaps @ d))
    as_far = np.count_nonzero(extreme >= abs(observed) * (1 - 1e-9))
    assert not exact and p == pytest.approx((1 + as_far) / (1 + DEFAULT_SWAPS))


def test_a_batch_of_tests_gives_each_test_its_own_p() -> None:
    """``pvalues`` shares one matrix product among tests of the same size: every p equals the test's p
    alone (exact sizes, random arrangements over several blocks, a real gap, no slot, an undefined gap)."""
    rng = np.random.default_rng(7)
    tests = []
    for n in (5, 9, 18, 18, 53, 130, 9, 53):
        b = LEVELS[np.arange(n) % LEVELS.size]
        r = b * np.exp(0.03 * rng.standard_normal(n))
        c = b * np.exp(0.03 * rng.standard_normal(n)) * (0.96 if n == 53 else 1.0)
        tests.append((np.column_stack([r, c]), np.column_stack([c, r]), _gap))
    tests.append((np.zeros((0, 2)), np.zeros((0, 2)), _gap))
    tests.append((np.zeros((6, 2)), np.zeros((6, 2)), _gap))  # 0 / 0: no finite gap
    batch = SwapTest(seed=11).pvalues(tests)
    alone = [SwapTest(seed=11).pvalue(*test) for test in tests]
    assert batch[:8] == alone[:8]
    assert np.isnan(batch[8]) and np.isnan(batch[9]) and np.isnan(alone[8]) and np.isnan(alone[9])
    assert min(batch[4], batch[7]) < 0.01 < min(batch[:4])  # the planted 4% gap is found, the nulls are not


def test_repeated_negated_and_zero_columns_are_multiplied_once_with_the_same_p() -> None:
    """A gap's swap exchanges [sum, n] of the comparison and the reference: the differences' reference
    columns are the comparison's negated, and the counts' are 0 with one answer a slot. The p is the
    one a direct count over every arrangement gives (exact: 10 slots), alone or beside a test whose
    columns are all 0."""
    rng = np.random.default_rng(5)
    cmp_, ref = rng.normal(100, 10, 10) + 4, rng.normal(100, 10, 10)
    s = np.column_stack([cmp_, np.ones(10), ref, np.ones(10)])

    def ratio(t: np.ndarray) -> np.ndarray:
        return np.asarray(t[:, 0] / t[:, 1] - t[:, 2] / t[:, 3])

    test = SwapTest(seed=3)
    p = test.pvalue(s, s[:, [2, 3, 0, 1]], ratio)
    arrangements, exact = test.arrangements(10)
    assert exact
    totals = s.sum(axis=0)[None, :] + arrangements @ (s[:, [2, 3, 0, 1]] - s)
    observed = abs(ratio(s.sum(axis=0)[None, :])[0])
    direct = np.count_nonzero(np.abs(ratio(totals)) >= observed * (1 - 1e-9) - 1e-300) / arrangements.shape[0]
    assert p == direct and 0 < p < 0.5
    zero = np.zeros((10, 4))
    assert test.pvalues([(s, s[:, [2, 3, 0, 1]], ratio), (zero, zero, ratio)])[0] == p


def test_swapped_shift_is_the_sum_of_the_blocks_products_bit_for_bit() -> None:
    """Random arrangements' shifts: ``0 + P0 + P1 + ...`` (one product per block of 64 slots), the same bits
    (a zero's sign included) whether the sum starts from a zeroed array or from the first product."""
    from counterbench.stats.swap_test import _BLOCK

    test = SwapTest(seed=5)
    rng = np.random.default_rng(9)
    for n in (14, 64, 65, 129, 200):
        diff = rng.normal(0, 1000, (n, 5))
        diff[:, 0] = -np.abs(diff[:, 0])
        diff[::2, 4] = 0.0
        expected = np.zeros((test.n_swaps, 5))
        for k in range(-(-n // _BLOCK)):
            rows = diff[k * _BLOCK : (k + 1) * _BLOCK]
            expected += test._block(k)[:, : rows.shape[0]] @ rows
        shift, exact = test._swapped_shift(diff)
        assert not exact
        np.testing.assert_array_equal(shift, expected)
        assert np.array_equal(np.signbit(shift), np.signbit(expected))
