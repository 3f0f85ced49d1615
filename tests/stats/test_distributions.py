"""``counterbench.stats.distributions`` returns what ``scipy.stats`` returns, bit for bit, with its edges."""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from scipy import stats

from counterbench.stats import distributions as dist

PROBABILITIES = [0.0, 5e-324, 1e-300, 1e-12, 1e-4, 0.0005, 0.0125, 0.025, 0.05, 0.1, 0.3, 0.5, 0.5000001, 0.7, 0.95,
                 0.975, 0.99, 1 - 1e-12, 1 - 2**-53, 1.0, -0.1, 1.5, math.nan, -math.inf, math.inf]
POINTS = [-math.inf, -1e300, -40.0, -3.2, -1.96, -1.0, -1e-9, -0.0, 0.0, 1e-300, 1e-9, 0.3, 1.0, 1.96, 2.5, 3.2,
          7.0, 40.0, 1e4, 1e300, math.inf, math.nan]
DEGREES = [-1.0, 0.0, 1e-3, 0.5, 1.0, 1.5, 2.0, 3.0, 5.0, 9.0, 29.0, 30.5, 100.0, 1e5, 1e12, math.inf, math.nan]


def _same(ours: Any, theirs: Any) -> None:
    """Equal bit for bit (NaN to NaN, −0.0 to −0.0), of the same type and shape."""
    assert type(ours) is type(theirs), (type(ours), type(theirs))
    a, b = np.asarray(ours), np.asarray(theirs)
    assert a.dtype == b.dtype and a.shape == b.shape
    same = (a == b) & (np.signbit(a) == np.signbit(b)) | (np.isnan(a) & np.isnan(b))
    assert same.all(), list(zip(a[~same].tolist(), b[~same].tolist(), strict=True))[:5]


TWO_ARGUMENTS: list[tuple[Callable[..., Any], Callable[..., Any], list[float]]] = [
    (dist.t_sf, stats.t.sf, POINTS),
    (dist.t_isf, stats.t.isf, PROBABILITIES),
    (dist.t_ppf, stats.t.ppf, PROBABILITIES),
    (dist.chi2_sf, stats.chi2.sf, POINTS),
]


@pytest.mark.parametrize(("ours", "theirs", "values"), TWO_ARGUMENTS, ids=["t_sf", "t_isf", "t_ppf", "chi2_sf"])
def test_two_argument_functions_equal_scipy_stats(ours: Callable[..., Any], theirs: Callable[..., Any],
                                                   values: list[float]) -> None:
    grid_x, grid_df = np.meshgrid(np.array(values), np.array(DEGREES), indexing="ij")
    _same(ours(grid_x, grid_df), theirs(grid_x, grid_df))  # arrays
    _same(ours(np.array(values), 7), theirs(np.array(values), 7))  # an array and a scalar
    _same(ours(0.3, np.array(DEGREES)), theirs(0.3, np.array(DEGREES)))
    for x in values:  # scalars: a NumPy scalar back, as from scipy
        for df in DEGREES:
            _same(ours(x, df), theirs(x, df))
    _same(ours(2, 4), theirs(2, 4))  # integers
    _same(ours([0.1, 0.2], [3, 4]), theirs([0.1, 0.2], [3, 4]))  # lists


@pytest.mark.parametrize(("ours", "theirs"), [(dist.norm_isf, stats.norm.isf), (dist.norm_ppf, stats.norm.ppf)],
                         ids=["norm_isf", "norm_ppf"])
def test_normal_quantiles_equal_scipy_stats(ours: Callable[..., Any], theirs: Callable[..., Any]) -> None:
    _same(ours(np.array(PROBABILITIES)), theirs(np.array(PROBABILITIES)))
    for q in PROBABILITIES:
        _same(ours(q), theirs(q))
    _same(ours(np.array(PROBABILITIES).reshape(5, 5)), theirs(np.array(PROBABILITIES).reshape(5, 5)))


def test_random_values_equal_scipy_stats() -> None:
    rng = np.random.default_rng(20261207)
    q = rng.uniform(0, 1, 5000)
    x = rng.normal(0, 4, 5000)
    df = rng.integers(1, 60, 5000).astype(np.float64)
    _same(dist.t_isf(q, df), stats.t.isf(q, df))
    _same(dist.t_ppf(q, df), stats.t.ppf(q, df))
    _same(dist.t_sf(x, df), stats.t.sf(x, df))
    _same(dist.chi2_sf(np.abs(x) * 3, df), stats.chi2.sf(np.abs(x) * 3, df))
    _same(dist.norm_isf(q), stats.norm.isf(q))


def test_the_module_does_not_import_scipy_stats() -> None:
    """The point of the module: an analysing process that needs only these does not load scipy.stats."""
    code = ("import sys, counterbench.stats.distributions as d; d.t_isf(0.025, 5); d.chi2_sf(3.0, 2); "
            "print('scipy.stats' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
