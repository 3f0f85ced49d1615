"""Welch's t-test, Cohen's d and every pairwise level comparison of an attribute, vectorised.

Used for intersectional profiles ("Compounding Disadvantage", §3.5 and Tables 7–8: "independent
samples t-tests (Welch)", Cohen's d, Benjamini–Hochberg FDR over the whole family of comparisons).

Decisions:

- Welch's t = (x̄_a − x̄_b) / √(s²_a/n_a + s²_b/n_b) with sample variances (ddof = 1), Welch–Satterthwaite
  degrees of freedom and a two-sided p from Student's t — identical to
  ``scipy.stats.ttest_ind(a, b, equal_var=False)``.
- Cohen's d uses the pooled-average standard deviation √((s²_a + s²_b)/2) (the paper's convention;
  it does not weight by group size). d is NaN when that SD is 0.
- A comparison with fewer than 2 values in either group, or a zero standard error, has t, p and d NaN
  (it is kept in the table and left out of the multiplicity family: BH ignores NaN p-values).
- Pairs are the levels' unordered pairs in the attribute's level order (a before b), so the sign of
  t and d is "a minus b".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt
import pandas as pd

from counterbench.stats.arrays import FloatArray
from counterbench.stats.cells import attribute_rows
from counterbench.stats.distributions import t_sf
from counterbench.stats.multiple_testing import benjamini_hochberg

__all__ = ["cohens_d", "group_moments", "pairwise_welch", "welch_from_moments", "welch_t"]



def welch_from_moments(
    mean_a: npt.ArrayLike, var_a: npt.ArrayLike, n_a: npt.ArrayLike,
    mean_b: npt.ArrayLike, var_b: npt.ArrayLike, n_b: npt.ArrayLike,
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """Vectorised Welch test from group moments: ``(t, df, p, d)`` arrays (see module decisions)."""
    ma, va, na = (np.asarray(x, dtype=np.float64) for x in (mean_a, var_a, n_a))
    mb, vb, nb = (np.asarray(x, dtype=np.float64) for x in (mean_b, var_b, n_b))
    with np.errstate(divide="ignore", invalid="ignore"):
        qa, qb = va / na, vb / nb
        se = np.sqrt(qa + qb)
        ok = (na >= 2) & (nb >= 2) & (se > 0)
        t = np.where(ok, (ma - mb) / se, np.nan)
        df = np.where(ok, (qa + qb) ** 2 / (qa**2 / (na - 1) + qb**2 / (nb - 1)), np.nan)
        p = np.where(ok, 2.0 * t_sf(np.abs(t), df), np.nan)
        sd = np.sqrt((va + vb) / 2.0)
        d = np.where((na >= 2) & (nb >= 2) & (sd > 0), (ma - mb) / sd, np.nan)
    return t, df, p, d


def welch_t(a: npt.ArrayLike, b: npt.ArrayLike) -> tuple[float, float, float]:
    """Welch's t, its degrees of freedom and two-sided p for two samples (NaNs dropped)."""
    x, y = _clean(a), _clean(b)
    t, df, p, _ = welch_from_moments(x.mean() if x.size else np.nan, x.var(ddof=1) if x.size > 1 else np.nan, x.size,
                                     y.mean() if y.size else np.nan, y.var(ddof=1) if y.size > 1 else np.nan, y.size)
    return float(t), float(df), float(p)


def cohens_d(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """Cohen's d of ``a`` minus ``b`` with the pooled-average SD (NaNs dropped)."""
    x, y = _clean(a), _clean(b)
    if x.size < 2 or y.size < 2:
        return float("nan")
    sd = np.sqrt((x.var(ddof=1) + y.var(ddof=1)) / 2.0)
    return float((x.mean() - y.mean()) / sd) if sd > 0 else float("nan")


def _clean(values: npt.ArrayLike) -> FloatArray:
    arr = np.asarray(values, dtype=np.float64).ravel()
    return arr[~np.isnan(arr)]


def group_moments(frame: pd.DataFrame, cell_cols: Sequence[str], level_col: str, value_col: str) -> pd.DataFrame:
    """n, mean and variance (ddof 1) of ``value_col`` per cell × level (rows with NaN values dropped)."""
    rows = frame.loc[frame[value_col].notna(), [*cell_cols, level_col, value_col]]
    grouped = rows.groupby([*cell_cols, level_col], sort=False, observed=True, dropna=False)[value_col]
    out = grouped.agg(n="count", mean="mean", var="var").reset_index()
    out["var"] = out["var"].astype(np.float64)
    return out


def pairwise_welch(
    frame: pd.DataFrame,
    cell_cols: Sequence[str],
    attributes: Mapping[str, Sequence[str]],
    value_col: str = "y",
    *,
    alpha: float = 0.05,
) -> pd.DataFrame:
    """Every pair of levels of every attribute within every cell: Welch t, p, Cohen's d, BH over the family.

    ``attributes`` maps an attribute column to its levels in order; rows whose attribute is empty or
    missing are left out of that attribute's comparisons. Returns ``cell_cols..., attribute, level_a,
    level_b, n_a, n_b, mean_a, mean_b, sd_a, sd_b, diff, t, df, p, d, p_fdr, significant`` — the family
    for BH is every row of the returned table.
    """
    parts = []
    for attribute, levels, sub in attribute_rows(frame, attributes):
        moments = group_moments(sub, cell_cols, attribute, value_col).rename(columns={attribute: "level"})
        order = {lv: i for i, lv in enumerate(levels)}
        moments["rank"] = moments["level"].map(order)
        keys = list(cell_cols)
        left, right = (moments.rename(columns={"n": f"n_{s}", "mean": f"mean_{s}", "var": f"var_{s}",
                                               "level": f"level_{s}", "rank": f"r_{s}"}) for s in ("a", "b"))
        pairs = left.merge(right, on=keys, how="inner") if keys else left.merge(right, how="cross")
        pairs = pairs[pairs["r_a"] < pairs["r_b"]].sort_values([*keys, "r_a", "r_b"], kind="mergesort")
        pairs.insert(len(keys), "attribute", attribute)
        parts.append(pairs.drop(columns=["r_a", "r_b"]))
    columns = [*cell_cols, "attribute", "level_a", "level_b", "n_a", "n_b", "mean_a", "mean_b", "sd_a", "sd_b",
               "diff", "t", "df", "p", "d", "p_fdr", "significant"]
    if not parts:
        return pd.DataFrame(columns=columns)
    table = pd.concat(parts, ignore_index=True)
    t, df, p, d = welch_from_moments(table["mean_a"], table["var_a"], table["n_a"],
                                     table["mean_b"], table["var_b"], table["n_b"])
    table = table.assign(sd_a=np.sqrt(table["var_a"]), sd_b=np.sqrt(table["var_b"]),
                         diff=table["mean_a"] - table["mean_b"], t=t, df=df, p=p, d=d)
    adjusted, reject = benjamini_hochberg(table["p"].to_numpy(dtype=np.float64), alpha)
    table["p_fdr"] = adjusted
    table["significant"] = reject
    table[["n_a", "n_b"]] = table[["n_a", "n_b"]].astype(np.int64)
    return table[columns].reset_index(drop=True)
