"""cluster_totals and cluster_ratio_replicates: units nested in clusters, several ratios at once."""

from __future__ import annotations

import numpy as np

from counterbench.stats.cluster_bootstrap import cluster_ratio_replicates, cluster_totals, cluster_weights


def test_cluster_totals_sums_rows_per_cluster_in_order_of_appearance():
    rows = np.array([[1.0, 10.0], [2.0, 20.0], [3.0, 30.0], [4.0, 40.0]])
    np.testing.assert_array_equal(cluster_totals(rows, ["b", "a", "b", "c"]), [[4.0, 40.0], [2.0, 20.0], [4.0, 40.0]])
    np.testing.assert_array_equal(cluster_totals(np.array([1.0, 2.0, 3.0]), [0, 0, 1]), [3.0, 3.0])


def test_ratio_replicates_are_weighted_ratios_of_the_resampled_clusters():
    rng = np.random.default_rng(3)
    sums, counts = rng.random((7, 3)) * 5, rng.integers(1, 4, (7, 3)).astype(float)
    reps = cluster_ratio_replicates(sums, counts, 250, np.random.default_rng(9), block=100)
    again = np.random.default_rng(9)
    w = np.vstack([cluster_weights(again, 7, rows) for rows in (100, 100, 50)])
    np.testing.assert_allclose(reps, (w @ sums) / (w @ counts), rtol=1e-12)
    assert reps.shape == (250, 3)
    # the bootstrap centre is the pooled ratio
    np.testing.assert_allclose(reps.mean(axis=0), sums.sum(0) / counts.sum(0), rtol=0.1)


def test_replicate_totals_are_the_per_block_streams_whatever_the_memory_budget():
    """cluster_replicate_totals draws each block of 50 replicates from its own generator, as the
    block-at-a-time path (``workers=2``) does: the same totals to the last bit, under any budget."""
    from counterbench.stats.bootstrap import BLOCK_SIZE, _block_plan
    from counterbench.stats.cluster_bootstrap import cluster_bootstrap, cluster_replicate_totals

    suff = np.random.default_rng(4).random((23, 4)) * [5.0, 1.0, 7.0, 1.0]
    expected = np.vstack([cluster_weights(rng, 23, stop - start) @ suff for start, stop, rng in _block_plan(730, 11)])
    for budget in (1 << 22, 23 * BLOCK_SIZE * 3, 23 * 7):  # every block at once, three at a time, a block in parts
        totals = cluster_replicate_totals(suff, 730, 11, max_elements=budget)
        if budget >= 23 * BLOCK_SIZE:
            np.testing.assert_array_equal(totals, expected)
        assert totals.shape == (730, 4) and np.isfinite(totals).all()

    def ratio(t: np.ndarray) -> np.ndarray:
        return np.asarray(t[:, 0] / t[:, 1] - t[:, 2] / t[:, 3])

    one = cluster_bootstrap(suff, ratio, n_boot=730, seed=11, return_replicates=True)
    threads = cluster_bootstrap(suff, ratio, n_boot=730, seed=11, return_replicates=True, workers=2)
    np.testing.assert_array_equal(one.replicates, threads.replicates)
    assert (one.low, one.high) == (threads.low, threads.high)


def _all_blocks_at_once(suff: np.ndarray, n_boot: int, seed: int) -> np.ndarray:
    """The earlier cluster_replicate_totals: every block's draws counted together, multiplied 50 rows at a time."""
    from counterbench.stats.bootstrap import BLOCK_SIZE, _block_plan

    plan = _block_plan(n_boot, seed)
    n = suff.shape[0]
    idx = np.vstack([rng.integers(0, n, size=(stop - start, n), dtype=np.int64) for start, stop, rng in plan])
    flat = idx + (np.arange(n_boot, dtype=np.int64) * n)[:, None]
    weights = np.bincount(flat.ravel(), minlength=n_boot * n).reshape(n_boot, n).astype(np.float64)
    return np.vstack([weights[r : r + BLOCK_SIZE] @ suff for r in range(0, n_boot, BLOCK_SIZE)])


def test_replicate_totals_block_by_block_are_the_earlier_all_at_once_totals():
    """Counting and multiplying each block's weights as it is drawn gives the totals of counting them all at
    once, to the last bit (the analyses' golden numbers were made that way)."""
    from counterbench.stats.cluster_bootstrap import cluster_replicate_totals

    rng = np.random.default_rng(8)
    for n, m, n_boot in ((1, 2, 50), (6, 2, 2000), (17, 4, 999), (53, 8, 2000), (81, 4, 130), (300, 2, 51)):
        suff = np.column_stack([rng.lognormal(10, 1, (n, m // 2)), rng.integers(1, 4, (n, m // 2))])
        seed = int(rng.integers(0, 2**63))
        expected = _all_blocks_at_once(suff, n_boot, seed)
        np.testing.assert_array_equal(cluster_replicate_totals(suff, n_boot, seed), expected)
