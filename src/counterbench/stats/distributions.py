"""The distribution functions the analyses use most, from :mod:`scipy.special` alone.

Every analysing process needs a few tail probabilities and quantiles (Student's t, the normal, χ²).
``scipy.stats`` gives them but takes about 0.7 s to import (it loads scipy's optimisers, spatial
and signal modules and parses hundreds of docstrings); ``scipy.special``, which holds the functions
``scipy.stats`` itself evaluates, takes about 0.2 s. So these functions call the same special
functions on the same values and apply ``scipy.stats``'s own rules at the edges — NaN for a bad
parameter (a degrees-of-freedom count ≤ 0 or NaN) or a probability outside [0, 1], the support's
ends for probabilities 0 and 1, 1 and 0 for survival beyond the support — so they return exactly
what ``scipy.stats`` returns, bit for bit (``tests/stats/test_distributions.py`` compares them on
a grid with every edge). A scalar gives a NumPy scalar, an array an array, as in ``scipy.stats``.

Functions the analyses need more rarely (ranks, exact tests, contingency tables) still come from
``scipy.stats``, imported where they are used.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import special

__all__ = ["chi2_sf", "norm_isf", "norm_ppf", "t_isf", "t_ppf", "t_sf"]


def _result(values: npt.NDArray[np.float64]) -> Any:
    """A 0-d result as a NumPy scalar, as ``scipy.stats`` returns it."""
    return values[()] if values.ndim == 0 else values


def _survival(x: npt.ArrayLike, ok: npt.NDArray[np.bool_], low: float, value: npt.NDArray[np.float64]) -> Any:
    """``rv_continuous.sf``'s rules: NaN for a bad parameter or x, 1 at or below the support's lower end
    ``low``, 0 at +∞, ``value`` inside the support."""
    arr = np.asarray(x)
    xs = np.asarray(arr, dtype=np.promote_types(arr.dtype, np.float64))
    inside = ok & (xs > low) & (xs < np.inf)
    out = np.where(inside, value, np.where(ok & (xs <= low), 1.0, np.where(~ok | np.isnan(xs), np.nan, 0.0)))
    return _result(np.asarray(out, dtype=np.float64))


def _quantile(q: npt.ArrayLike, ok: npt.NDArray[np.bool_], at_zero: float, at_one: float,
              value: npt.NDArray[np.float64]) -> Any:
    """``rv_continuous.ppf``/``isf``'s rules: ``value`` for 0 < q < 1, the support's ends at q = 0 and
    q = 1, NaN for a bad parameter or q outside [0, 1]. ``+ 0.0`` is scipy's ``* scale + loc``."""
    qs = np.asarray(q)
    out = np.where(ok & (qs > 0) & (qs < 1), value + 0.0,
                   np.where(ok & (qs == 0), at_zero, np.where(ok & (qs == 1), at_one, np.nan)))
    return _result(np.asarray(out, dtype=np.float64))


def _positive(df: npt.ArrayLike) -> npt.NDArray[np.bool_]:
    with np.errstate(invalid="ignore"):
        return np.asarray(np.asarray(df) > 0)


def t_sf(x: npt.ArrayLike, df: npt.ArrayLike) -> Any:
    """``scipy.stats.t.sf(x, df)``: P(T > x) for Student's t with ``df`` degrees of freedom."""
    xs = np.asarray(x, dtype=np.float64)
    return _survival(x, _positive(df), -np.inf, special.stdtr(df, -xs))


def t_isf(q: npt.ArrayLike, df: npt.ArrayLike) -> Any:
    """``scipy.stats.t.isf(q, df)``: the x with P(T > x) = q."""
    return _quantile(q, _positive(df), np.inf, -np.inf, -special.stdtrit(df, q))


def t_ppf(q: npt.ArrayLike, df: npt.ArrayLike) -> Any:
    """``scipy.stats.t.ppf(q, df)``: the x with P(T ≤ x) = q."""
    return _quantile(q, _positive(df), -np.inf, np.inf, special.stdtrit(df, q))


def norm_isf(q: npt.ArrayLike) -> Any:
    """``scipy.stats.norm.isf(q)``: the standard normal's x with P(Z > x) = q."""
    return _quantile(q, np.asarray(True), np.inf, -np.inf, -special.ndtri(q))


def norm_ppf(q: npt.ArrayLike) -> Any:
    """``scipy.stats.norm.ppf(q)``: the standard normal's x with P(Z ≤ x) = q."""
    return _quantile(q, np.asarray(True), -np.inf, np.inf, special.ndtri(q))


def chi2_sf(x: npt.ArrayLike, df: npt.ArrayLike) -> Any:
    """``scipy.stats.chi2.sf(x, df)``: P(χ² > x) with ``df`` degrees of freedom."""
    return _survival(x, _positive(df), 0.0, special.chdtrc(df, x))
