"""Cohen's κ and weighted κ between two raters over the same items ("Compounding Disadvantage", Table 9).

κ = (p_o − p_e) / (1 − p_e) with the agreement weights ``w`` (identity for plain κ; linear
``1 − |i − j| / (k − 1)`` for linear-weighted κ): p_o = Σ w·O / n, p_e = Σ w·(r cᵀ) / n² from the row and
column margins. Identical to ``sklearn.metrics.cohen_kappa_score`` (which writes it with disagreement
weights) for ``weights=None`` and ``"linear"``.

Decisions: items where either rater has no value are dropped (``n`` counts the pairs kept);
categories are the union of both raters' values unless given (their order matters for weights:
give the ordinal scale, e.g. levels 1–5); κ is NaN when p_e = 1 (both raters constant and equal)
or no pair remains. The paper's interpretation bands: < 0 poor, < 0.20 slight, < 0.40 fair,
< 0.60 moderate, < 0.80 substantial, else almost perfect (:func:`interpret_kappa`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

__all__ = ["Kappa", "cohen_kappa", "interpret_kappa"]


@dataclass(frozen=True)
class Kappa:
    kappa: float
    observed: float
    expected: float
    n: int


def cohen_kappa(a: npt.ArrayLike, b: npt.ArrayLike, *, weights: str | None = None,
                categories: Sequence[float] | None = None) -> Kappa:
    """κ (``weights=None``) or linear-weighted κ (``weights="linear"``) with observed and expected agreement."""
    xa = np.asarray(a, dtype=object).ravel()
    ya = np.asarray(b, dtype=object).ravel()
    if len(xa) != len(ya):
        raise ValueError("cohen_kappa: the two raters must rate the same items")
    keep = ~(pd.isna(xa) | pd.isna(ya))
    x, y = xa[keep].tolist(), ya[keep].tolist()
    n = len(x)
    cats = list(categories) if categories is not None else sorted(set(x) | set(y))
    k = len(cats)
    if n == 0 or k == 0:
        return Kappa(float("nan"), float("nan"), float("nan"), n)
    index = {c: i for i, c in enumerate(cats)}
    try:
        xi = np.fromiter((index[v] for v in x), dtype=np.int64, count=n)
        yi = np.fromiter((index[v] for v in y), dtype=np.int64, count=n)
    except KeyError as err:
        raise ValueError(f"cohen_kappa: value {err.args[0]!r} is not among the categories") from None
    observed = np.bincount(xi * k + yi, minlength=k * k).reshape(k, k).astype(np.float64)
    if weights is None:
        w = np.eye(k)
    elif weights == "linear":
        grid = np.arange(k, dtype=np.float64)
        w = 1.0 - np.abs(grid[:, None] - grid[None, :]) / max(k - 1, 1)
    else:
        raise ValueError(f"cohen_kappa: weights must be None or 'linear', got {weights!r}")
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / n
    p_o = float((w * observed).sum() / n)
    p_e = float((w * expected).sum() / n)
    kappa = (p_o - p_e) / (1.0 - p_e) if p_e < 1.0 else float("nan")
    return Kappa(float(kappa), p_o, p_e, n)


def interpret_kappa(kappa: float) -> str:
    """The paper's words for a κ value (Landis & Koch bands, with "poor" below 0)."""
    if np.isnan(kappa):
        return "n/a"
    for bound, word in ((0.0, "poor"), (0.2, "slight"), (0.4, "fair"), (0.6, "moderate"), (0.8, "substantial")):
        if kappa < bound:
            return word
    return "almost perfect"
