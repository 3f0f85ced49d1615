"""z-normalised group bias per attribute: MAB and MDB ("Compounding Disadvantage", §3.5 equations 3–4, Table 4).

Within each cell (model × task × dataset × context × role) the outcome is z-scored; per attribute,
each level's mean z is its group score Z. Then

- MAB (mean absolute bias) = mean over levels of |Z_level − Z_ref|, with the reference Z_ref the
  unweighted mean of the levels' group means (so rare levels weigh as much as common ones);
- MDB (maximum difference bias) = max Z − min Z over the levels;
- the same two in raw units (group means of the outcome itself), and the *extreme level* — the level
  farthest from the reference, with its signed deviation (the paper's "MAB group" and signed "MDB").

Decisions: z uses the cell's mean and sample SD (ddof = 1); a cell with SD 0 or fewer than 2 values has
z = 0 (no variation, no bias); NaN outcomes are dropped; rows whose attribute is empty are left out of
that attribute (a profile that does not state it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from counterbench.stats.cells import attribute_rows

__all__ = ["group_scores", "level_means", "mab_mdb", "zscore_within"]


def zscore_within(frame: pd.DataFrame, cell_cols: Sequence[str], value_col: str = "y") -> pd.Series:
    """The outcome z-scored within each cell (NaN where the outcome is NaN)."""
    values = frame[value_col].astype(np.float64)
    if cell_cols:
        grouped = values.groupby([frame[c] for c in cell_cols], sort=False, observed=True, dropna=False)
        mean, sd = grouped.transform("mean"), grouped.transform("std")
    else:
        mean = pd.Series(values.mean(), index=frame.index)
        sd = pd.Series(values.std(), index=frame.index)
    z = (values - mean) / sd
    return z.where(sd.gt(0) | values.isna(), 0.0).rename("z")


def group_scores(frame: pd.DataFrame, cell_cols: Sequence[str], attributes: Mapping[str, Sequence[str]],
                 value_col: str = "y") -> pd.DataFrame:
    """Per cell × attribute × level: ``n``, raw mean, mean z, and deviations from the unweighted reference."""
    base = frame.assign(z=zscore_within(frame, cell_cols, value_col))
    table = level_means(base[base[value_col].notna()], cell_cols, attributes, value_col)
    columns = [*cell_cols, "attribute", "level", "n", "mean", "mean_z", "dev", "dev_z"]
    if table is None:
        return pd.DataFrame(columns=columns)
    keys = [*cell_cols, "attribute"]
    grouped = table.groupby(keys, sort=False, observed=True, dropna=False)
    table["dev"] = table["mean"] - grouped["mean"].transform("mean")
    table["dev_z"] = table["mean_z"] - grouped["mean_z"].transform("mean")
    return table[columns].reset_index(drop=True)


def level_means(base: pd.DataFrame, cell_cols: Sequence[str], attributes: Mapping[str, Sequence[str]],
                value_col: str, **extra: tuple[str, str]) -> pd.DataFrame | None:
    """Per cell × attribute × level of ``base`` (which has a ``z`` column): ``n``, ``mean`` and ``mean_z``.

    ``extra`` adds named aggregations (``name=(column, how)``). The rows come cell by cell, each attribute's
    levels in the order ``attributes`` lists them (an ``order`` column says it); ``None`` when no attribute
    has a row at one of its levels.
    """
    parts = []
    for attribute, levels, sub in attribute_rows(base, attributes):
        grouped = sub.groupby([*cell_cols, attribute], sort=False, observed=True, dropna=False)
        stats = grouped.agg(n=(value_col, "count"), mean=(value_col, "mean"), mean_z=("z", "mean"),
                            **extra).reset_index()
        stats = stats.rename(columns={attribute: "level"})
        stats.insert(len(cell_cols), "attribute", attribute)
        stats["order"] = stats["level"].map({lv: i for i, lv in enumerate(levels)})
        parts.append(stats)
    if not parts:
        return None
    return pd.concat(parts, ignore_index=True).sort_values([*cell_cols, "attribute", "order"], kind="mergesort")


def mab_mdb(scores: pd.DataFrame, cell_cols: Sequence[str]) -> pd.DataFrame:
    """MAB and MDB per cell × attribute from :func:`group_scores` (z and raw units, extreme level)."""
    keys = [*cell_cols, "attribute"]
    columns = [*keys, "n_levels", "mab_z", "mdb_z", "mab", "mdb", "extreme_level", "extreme_dev_z", "extreme_dev"]
    if scores.empty:
        return pd.DataFrame(columns=columns)
    grouped = scores.groupby(keys, sort=False, observed=True, dropna=False)
    out = grouped.agg(n_levels=("level", "count"), mab_z=("dev_z", lambda s: s.abs().mean()),
                      zmax=("mean_z", "max"), zmin=("mean_z", "min"), mab=("dev", lambda s: s.abs().mean()),
                      rmax=("mean", "max"), rmin=("mean", "min")).reset_index()
    out["mdb_z"] = out["zmax"] - out["zmin"]
    out["mdb"] = out["rmax"] - out["rmin"]
    absolute = scores.assign(_abs=scores["dev_z"].abs())
    idx = absolute.groupby(keys, sort=False, observed=True, dropna=False)["_abs"].idxmax()
    extreme = scores.loc[idx.to_numpy(), [*keys, "level", "dev_z", "dev"]].rename(
        columns={"level": "extreme_level", "dev_z": "extreme_dev_z", "dev": "extreme_dev"})
    out = out.merge(extreme, on=keys, how="left")
    return out[columns].sort_values("mab_z", ascending=False, kind="mergesort").reset_index(drop=True)
