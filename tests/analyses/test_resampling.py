"""The stratified, binned bootstrap of :mod:`counterbench.analyses.resampling` against plain index
resampling, and its pooling of strata into cells."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from counterbench.analyses.resampling import (
    binned_replicate_sums,
    bootstrap_strata,
    cell_replicates,
    slot_bootstrap,
    summarise_cells,
)


def _index_bootstrap(x: np.ndarray, reps: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = np.empty(reps)
    for start in range(0, reps, 250):
        idx = rng.integers(0, x.size, size=(min(250, reps - start), x.size))
        out[start : start + idx.shape[0]] = x[idx].sum(axis=1)
    return out


DATA = {
    "half-normal": lambda rng: np.abs(rng.normal(0, 4, 4000)),
    "lognormal σ=2": lambda rng: rng.lognormal(0, 2.0, 6000),
    "outliers": lambda rng: np.concatenate([np.abs(rng.normal(0, 4, 3950)), rng.uniform(100, 200, 50)]),
    "LLM-like": lambda rng: np.concatenate([np.zeros(2500), rng.choice([4.9, 9.5, 18.2, 66.7, 200.0], 1500)
                                            + rng.normal(0, 0.01, 1500)]),
}


@pytest.mark.parametrize("name", sorted(DATA))
def test_binned_matches_index_resampling(name: str) -> None:
    x = DATA[name](np.random.default_rng(11))
    reps = 20_000
    exact = np.quantile(_index_bootstrap(x, reps, 1), [0.025, 0.5, 0.975])
    binned = np.quantile(binned_replicate_sums(x, reps, np.random.default_rng(2)), [0.025, 0.5, 0.975])
    half_width = (exact[2] - exact[0]) / 2
    # Monte Carlo noise of each quantile at 20,000 replicates is ~1% of the half-width
    assert np.abs(binned - exact).max() < 0.05 * half_width, (binned - exact) / half_width


def test_few_distinct_values_are_resampled_exactly() -> None:
    x = np.repeat([0.0, 5.0, 40.0], [600, 300, 100])
    sums = binned_replicate_sums(x, 50_000, np.random.default_rng(0), bins=16)
    # replicate sums are sums of the values themselves: multiples of 5 (a multinomial over 3 values)
    assert np.allclose(sums % 5.0, 0.0)
    n, mean, var = x.size, x.mean(), x.var()
    assert sums.mean() / n == pytest.approx(mean, rel=2e-3)
    assert sums.var() == pytest.approx(n * var, rel=0.03)


def test_nan_and_empty_inputs() -> None:
    assert np.isnan(binned_replicate_sums([np.nan, np.nan], 10, np.random.default_rng(0))).all()
    assert binned_replicate_sums([1.0, 2.0], 0, np.random.default_rng(0)).size == 0
    estimate, low, high = slot_bootstrap(np.empty((0, 2)), lambda t: t[:, 0] / t[:, 1], 100, 0)
    assert np.isnan([estimate, low, high]).all()


def test_strata_pool_into_cells() -> None:
    rng = np.random.default_rng(5)
    keys = pd.DataFrame({"model": ["a", "a", "b"], "axis": ["x", "y", "x"]})
    values = np.concatenate([rng.normal(10, 1, 300), rng.normal(20, 1, 100), rng.normal(5, 1, 200)])
    strata = np.repeat([0, 1, 2], [300, 100, 200])
    clusters = np.arange(600) // 10
    values[3] = np.nan
    boot = bootstrap_strata(values, strata, keys, clusters, n_boot=400, seed=1, tau=12.0, label="t")
    assert boot.n.tolist() == [299, 100, 200]
    cells = summarise_cells(cell_replicates(boot, ["model"])).set_index("model")
    assert cells.loc["a", "mean_delta"] == pytest.approx(np.nanmean(values[:400]))
    assert cells.loc["a", "n_pairs"] == 399
    assert cells.loc["a", "v10"] == pytest.approx(100 * np.sum(values[:400] > 12) / 399)
    assert cells.loc["a", "pair_ci_low"] < cells.loc["a", "mean_delta"] < cells.loc["a", "pair_ci_high"]
    assert cells.loc["a", "ci_low"] < cells.loc["a", "mean_delta"] < cells.loc["a", "ci_high"]  # slots
    assert cells.loc["a", "n_slots"] == 40
    assert cells.loc["a", "v10_ci_low"] < cells.loc["a", "v10"] < cells.loc["a", "v10_ci_high"]
    # a stratum alone: the pooled replicate is that stratum's replicate mean
    single = cell_replicates(boot, ["model", "axis"])
    assert np.allclose(single.pair[2], boot.pair_sums[2] / 200)
    again = bootstrap_strata(values, strata, keys, clusters, n_boot=400, seed=1, tau=12.0, label="t")
    assert np.array_equal(again.pair_sums, boot.pair_sums)  # seeded per stratum


def test_a_stratum_stream_does_not_depend_on_the_others() -> None:
    rng = np.random.default_rng(9)
    values = rng.normal(10, 2, 500)
    both = bootstrap_strata(values, np.repeat([0, 1], 250), pd.DataFrame({"model": ["a", "b"]}),
                            np.arange(500) // 5, n_boot=200, seed=3, tau=10.0, label="t")
    alone = bootstrap_strata(values[250:], np.zeros(250, dtype=int), pd.DataFrame({"model": ["b"]}),
                             np.arange(250) // 5, n_boot=200, seed=3, tau=10.0, label="t")
    assert np.array_equal(both.pair_sums[1], alone.pair_sums[0])


def test_coverage_of_pair_and_slot_intervals() -> None:
    """300 simulated studies: the 95% intervals cover the true mean 92–98% of the time.

    Pairs: iid skewed values in two strata (pair interval). Slots: values sharing a random slot
    effect (slot interval; the pair interval would under-cover here, which is why both exist).
    """
    rng = np.random.default_rng(2024)
    keys = pd.DataFrame({"model": ["m", "m"], "axis": ["x", "y"]})
    strata = np.repeat([0, 1], [600, 400])
    slots = np.arange(1000) // 20
    true_mean = (600 * np.exp(0.5) + 400 * 3 * np.exp(0.5)) / 1000  # lognormal(0, 1) means, ×3 in stratum y
    covered_pairs = covered_slots = 0
    reps = 300
    for i in range(reps):
        iid = rng.lognormal(0, 1, 1000) * np.where(strata == 1, 3.0, 1.0)
        boot = bootstrap_strata(iid, strata, keys, slots, n_boot=500, seed=i, tau=5.0, label="cov")
        cell = summarise_cells(cell_replicates(boot, ["model"])).iloc[0]
        covered_pairs += cell["pair_ci_low"] <= true_mean <= cell["pair_ci_high"]
        clustered = np.repeat(rng.normal(0, 1, 50), 20) + rng.normal(0, 1, 1000)  # true mean 0
        boot = bootstrap_strata(clustered, np.zeros(1000, dtype=int), keys.iloc[:1], slots, n_boot=500, seed=i,
                                tau=5.0, label="cov")
        cell = summarise_cells(cell_replicates(boot, ["model"])).iloc[0]
        covered_slots += cell["ci_low"] <= 0.0 <= cell["ci_high"]
    print(f"coverage: pairs {covered_pairs / reps:.3f}, slots {covered_slots / reps:.3f}")
    assert 0.92 <= covered_pairs / reps <= 0.98, covered_pairs / reps
    assert 0.92 <= covered_slots / reps <= 0.98, covered_slots / reps
