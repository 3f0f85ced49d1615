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
