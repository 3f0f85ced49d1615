"""Agreement between raters: Cohen's κ and weighted κ between two raters over the same items ("Compounding
Disadvantage", Table 9), and Krippendorff's α (nominal) for any number of raters per item.

κ = (p_o − p_e) / (1 − p_e) with the agreement weights ``w`` (identity for plain κ; linear
``1 − |i − j| / (k − 1)`` for linear-weighted κ): p_o = Σ w·O / n, p_e = Σ w·(r cᵀ) / n² from the row and
column margins. Identical to ``sklearn.metrics.cohen_kappa_score`` (which writes it with disagreement
weights) for ``weights=None`` and ``"linear"``.

Decisions: items where either rater has no value are dropped (``n`` counts the pairs kept);
categories are the union of both raters' values unless given (their order matters for weights:
give the ordinal scale, e.g. levels 1–5); κ is NaN when p_e = 1 (both raters constant and equal)
or no pair remains. The paper's interpretation bands: < 0 poor, < 0.20 slight, < 0.40 fair,
< 0.60 moderate, < 0.80 substantial, else almost perfect (:func:`interpret_kappa`).

Krippendorff's α (*Computing Krippendorff's Alpha-Reliability*, 2011; :func:`krippendorff_alpha_nominal`):
each unit (an item judged by several raters) contributes its pairable values — a unit with m ≥ 2
values adds, for every ordered pair of two different raters' values (c, k), 1/(m − 1) to the
coincidence matrix o[c, k]; units with one value are left out. With n_c = Σ_k o[c, k] and n = Σ n_c,
α = 1 − (n − 1) · Σ_{c≠k} o[c, k] / Σ_{c≠k} n_c · n_k (1: perfect agreement, 0: what chance gives).
It is NaN when no unit is pairable or every pairable value is the same category.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import numpy.typing as npt
import pandas as pd

__all__ = ["Kappa", "cohen_kappa", "interpret_kappa", "krippendorff_alpha_nominal", "pair_agreement"]


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


def _pairable(units: Mapping[object, Sequence[object]] | Iterable[Sequence[object]]) -> list[list[object]]:
    values = units.values() if isinstance(units, Mapping) else units
    kept = [[v for v in unit if v is not None and v == v] for unit in values]  # v == v drops NaN
    return [unit for unit in kept if len(unit) >= 2]


def krippendorff_alpha_nominal(units: Mapping[object, Sequence[object]] | Iterable[Sequence[object]]) -> float:
    """Krippendorff's alpha (nominal) of ``units``: each unit's values, one per annotator (None / NaN: none)."""
    pairable = _pairable(units)
    categories = sorted({str(v) for unit in pairable for v in unit})
    if not pairable or len(categories) < 2:
        return float("nan")
    index = {c: i for i, c in enumerate(categories)}
    o = np.zeros((len(categories), len(categories)))
    for unit in pairable:
        codes = [index[str(v)] for v in unit]
        weight = 1.0 / (len(codes) - 1)
        for a in range(len(codes)):
            for b in range(len(codes)):
                if a != b:
                    o[codes[a], codes[b]] += weight
    n_c = o.sum(axis=1)
    n = n_c.sum()
    observed = o.sum() - np.trace(o)
    expected = n_c.sum() ** 2 - np.sum(n_c ** 2)
    return float(1.0 - (n - 1.0) * observed / expected)


def pair_agreement(units: Mapping[object, Sequence[object]] | Iterable[Sequence[object]]) -> tuple[int, float]:
    """The number of annotator pairs over the pairable units and the share of them that agree."""
    pairs = [a == b for unit in _pairable(units) for a, b in combinations(unit, 2)]
    return len(pairs), (float(np.mean(pairs)) if pairs else float("nan"))
