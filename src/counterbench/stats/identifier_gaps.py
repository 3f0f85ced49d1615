"""Identifier-level gaps: canonical pair gap, maximum observed gap, identifier deviation.

Paper App. A.3 (CPG, Fig. 8; MOG, Fig. 9) and §6 / App. C (identifier deviation, Figs. 4, 10, 11).
Each function works on one analysis cell's tidy rows (e.g. one model ×
use case × axis, optionally × language); the analyses layer loops over cells and derives each
cell's seed with :func:`counterbench.stats.seeding.stable_seed`.

Decisions:

- **CPG** uses matched slots only (slots where both the reference R and the comparison C have a
  value): CPG% = (x̄_R − x̄_C) / ((x̄_R + x̄_C)/2) × 100 over those slots, NaN when x̄_R + x̄_C ≤ 0.
  Sign consistency = % of matched slots with R > C (strict; ties count as "not R > C" and are
  reported separately). CI: percentile bootstrap resampling matched slots (paired: a slot's R and C
  values move together); ``significant`` when the CI excludes 0.
- **MOG** uses each identifier's mean over all its available values in the cell; the maximum of the
  unsigned relative gap over all identifier pairs (pairs whose mean sum is ≤ 0 are skipped); ``top``
  is the identifier with the higher mean. CI: resampling slots and recomputing the maximum, whatever
  pair attains it in the replicate. A maximum is biased upward under noise and its percentile CI
  does not correct for that: read it as descriptive.
- **Identifier deviation**: per slice, m_i = identifier mean, G = unweighted mean of the m_i,
  deviation = (m_i − G)/|G| × 100 (NaN when G = 0); averaged (unweighted) over slices on request.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from counterbench.stats.arrays import FloatArray
from counterbench.stats.bootstrap import BootstrapResult
from counterbench.stats.cluster_bootstrap import cluster_bootstrap
from counterbench.stats.gaps import relative_gap

__all__ = [
    "CanonicalPairGap",
    "MaximumObservedGap",
    "canonical_pair_gap",
    "identifier_deviation",
    "maximum_observed_gap",
]



@dataclass(frozen=True)
class CanonicalPairGap:
    """CPG of one reference–comparison pair in one cell (paper App. A.3, Fig. 8)."""

    reference: str
    comparison: str
    cpg: float
    low: float
    high: float
    significant: bool
    sign_consistency: float
    tie_share: float
    mean_reference: float
    mean_comparison: float
    n_slots: int
    bootstrap: BootstrapResult


@dataclass(frozen=True)
class MaximumObservedGap:
    """MOG of one cell: the largest relative gap between identifier means (paper App. A.3, Fig. 9)."""

    mog: float
    low: float
    high: float
    top: object
    bottom: object
    mean_top: float
    mean_bottom: float
    n_identifiers: int
    n_slots: int
    bootstrap: BootstrapResult


def _check_columns(frame: pd.DataFrame, columns: Sequence[str], where: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{where}: columns {missing} are not in the frame")


def _slot_identifier_table(
    frame: pd.DataFrame, slot_cols: Sequence[str], identifier_col: str, value_col: str, where: str
) -> pd.DataFrame:
    """Slots × identifiers table of values (NaN where missing); raises on duplicate cells."""
    cols = list(slot_cols)
    _check_columns(frame, [*cols, identifier_col, value_col], where)
    rows = frame.loc[frame[value_col].notna(), [*cols, identifier_col, value_col]]
    if cols:
        dup = rows.duplicated([*cols, identifier_col])
        if dup.any():
            raise ValueError(
                f"{where}: identifier {rows.loc[dup, identifier_col].iloc[0]!r} appears more than once in a "
                "slot; deduplicate first or add the distinguishing column to slot_cols"
            )
        table = rows.set_index([*cols, identifier_col])[value_col].unstack(identifier_col)
    else:
        if rows[identifier_col].duplicated().any():
            raise ValueError(f"{where}: duplicate identifiers and no slot columns given")
        table = rows.set_index(identifier_col)[value_col].to_frame().T
    return table.astype(np.float64)


def canonical_pair_gap(
    frame: pd.DataFrame,
    reference: str,
    comparison: str,
    slot_cols: Sequence[str],
    identifier_col: str = "identifier",
    value_col: str = "value",
    *,
    n_boot: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> CanonicalPairGap:
    """Canonical pair gap with sign consistency and a paired slot bootstrap CI (paper App. A.3).

    ``slot_cols`` are the columns that vary within the cell (e.g. ``["profile_id",
    "question_variant"]``, plus ``"language"`` when languages are pooled). Decisions: see module.
    """
    sub = frame[frame[identifier_col].isin([reference, comparison])]
    table = _slot_identifier_table(sub, slot_cols, identifier_col, value_col, "canonical_pair_gap")
    for name in (reference, comparison):
        if name not in table.columns:
            table[name] = np.nan
    matched = table[[reference, comparison]].dropna()
    r = matched[reference].to_numpy(dtype=np.float64)
    c = matched[comparison].to_numpy(dtype=np.float64)

    def signed_gap(totals: FloatArray) -> FloatArray:
        return relative_gap(totals[:, 0], totals[:, 1], signed=True)

    boot = cluster_bootstrap(
        np.column_stack([r, c]),
        signed_gap,
        n_boot=n_boot,
        seed=seed,
        confidence=confidence,
        method="paired, resampling matched slots",
    )
    n = r.size
    return CanonicalPairGap(
        reference=reference,
        comparison=comparison,
        cpg=boot.estimate,
        low=boot.low,
        high=boot.high,
        significant=boot.excludes(0.0),
        sign_consistency=float(np.count_nonzero(r > c) * 100.0 / n) if n else float("nan"),
        tie_share=float(np.count_nonzero(r == c) * 100.0 / n) if n else float("nan"),
        mean_reference=float(r.mean()) if n else float("nan"),
        mean_comparison=float(c.mean()) if n else float("nan"),
        n_slots=n,
        bootstrap=boot,
    )


def _max_gap(means: FloatArray) -> tuple[FloatArray, npt.NDArray[np.int64]]:
    """Row-wise maximum unsigned relative gap over identifier pairs, and the argmax pair index."""
    k = means.shape[-1]
    iu, ju = np.triu_indices(k, 1)
    gaps = relative_gap(means[:, iu], means[:, ju])
    valid = ~np.isnan(gaps)
    filled = np.where(valid, gaps, -np.inf)
    best = np.argmax(filled, axis=1) if iu.size else np.zeros(means.shape[0], dtype=np.int64)
    out = np.take_along_axis(filled, best[:, None], axis=1)[:, 0] if iu.size else np.full(means.shape[0], -np.inf)
    out = np.where(np.isfinite(out), out, np.nan)
    return np.asarray(out, dtype=np.float64), best.astype(np.int64)


def maximum_observed_gap(
    frame: pd.DataFrame,
    slot_cols: Sequence[str],
    identifier_col: str = "identifier",
    value_col: str = "value",
    *,
    n_boot: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> MaximumObservedGap:
    """Maximum observed gap over identifier pairs, its top/bottom identifiers and a slot CI (App. A.3).

    Decisions: see module (means over all available values; bootstrap resamples slots).
    """
    table = _slot_identifier_table(frame, slot_cols, identifier_col, value_col, "maximum_observed_gap")
    values = table.to_numpy(dtype=np.float64)
    present = ~np.isnan(values)
    k = values.shape[1]
    sufficient = np.hstack([np.where(present, values, 0.0), present.astype(np.float64)])

    def statistic(totals: FloatArray) -> FloatArray:
        with np.errstate(divide="ignore", invalid="ignore"):
            means = totals[:, :k] / totals[:, k:]
        return _max_gap(means)[0]

    boot = cluster_bootstrap(
        sufficient, statistic, n_boot=n_boot, seed=seed, confidence=confidence, method="resampling slots"
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        means = (sufficient[:, :k].sum(axis=0) / sufficient[:, k:].sum(axis=0))[None, :]
    mog, best = _max_gap(means)
    top: object = None
    bottom: object = None
    mean_top = mean_bottom = float("nan")
    if k >= 2 and not np.isnan(mog[0]):
        iu, ju = np.triu_indices(k, 1)
        i, j = int(iu[best[0]]), int(ju[best[0]])
        if means[0, j] > means[0, i]:
            i, j = j, i
        top, bottom = table.columns[i], table.columns[j]
        mean_top, mean_bottom = float(means[0, i]), float(means[0, j])
    return MaximumObservedGap(
        mog=float(mog[0]),
        low=boot.low,
        high=boot.high,
        top=top,
        bottom=bottom,
        mean_top=mean_top,
        mean_bottom=mean_bottom,
        n_identifiers=int(np.count_nonzero(present.any(axis=0))),
        n_slots=int(values.shape[0]),
        bootstrap=boot,
    )


def identifier_deviation(
    frame: pd.DataFrame,
    slice_cols: Sequence[str],
    identifier_col: str = "identifier",
    value_col: str = "value",
    *,
    average_over: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Deviation of each identifier's mean from the unweighted axis mean, in % (paper §6, App. C).

    Per slice (``slice_cols``, e.g. model × language × use case × axis): columns ``mean``,
    ``axis_mean`` (G) and ``deviation`` = (m_i − G)/|G| × 100. With ``average_over`` (a subset of
    ``slice_cols``, e.g. ``["use_case", "language"]``), deviations are averaged over those columns
    (unweighted, NaN ignored) and the result has ``deviation`` and ``n_slices``.
    """
    cols = list(slice_cols)
    _check_columns(frame, [*cols, identifier_col, value_col], "identifier_deviation")
    rows = frame.loc[frame[value_col].notna(), [*cols, identifier_col, value_col]]
    means = (
        rows.groupby([*cols, identifier_col], sort=True, observed=True, dropna=False)[value_col]
        .mean()
        .rename("mean")
        .reset_index()
    )
    if cols:
        means["axis_mean"] = means.groupby(cols, sort=False, observed=True, dropna=False)["mean"].transform("mean")
    else:
        means["axis_mean"] = means["mean"].mean()
    denom = means["axis_mean"].abs().replace(0.0, np.nan)
    means["deviation"] = (means["mean"] - means["axis_mean"]) / denom * 100.0
    if not average_over:
        return means
    unknown = [c for c in average_over if c not in cols]
    if unknown:
        raise ValueError(f"identifier_deviation: average_over columns {unknown} are not slice columns")
    keep = [c for c in cols if c not in average_over]
    grouped = means.groupby([*keep, identifier_col], sort=True, observed=True, dropna=False)["deviation"]
    return grouped.agg(deviation="mean", n_slices="count").reset_index()
