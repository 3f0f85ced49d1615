"""The two conventions of the bias table (MAB, MDB, the extreme level): counterbench's and the paper's.

The paper defines its bias metrics in §3.5 (Eq. 3–4) and reports them in Table 4; counterbench's
default differs in three places. ``convention="paper"`` follows the paper:

=====================  =================================================  ==============================================
                       ``counterbench`` (default)                         ``paper``
=====================  =================================================  ==============================================
z-score                within the cell (model × task × context ×           within the cell *and subject* (§3.5: "within
                       dataset × role)                                    each subgroup and subject")
MAB                    mean over levels of |Z_level − Z_ref|, Z_ref the    Eq. 3: mean over levels of |Z_level| (the
                       unweighted mean of the levels' Z                   reference is 0, the cell's mean)
MDB                    max Z − min Z                                       Eq. 4: max Z − min Z (the same formula)
extreme level          farthest from Z_ref (a binary attribute's two       Table 4's "MAB group": the largest |Z_level|,
                       levels tie: the first is named)                    with its signed Z (Table 4's "Max MDB")
raw units              level mean − unweighted mean of level means        level mean − the cell's mean
=====================  =================================================  ==============================================

Z_level is the mean z of the level's responses. Both use the sample SD (ddof = 1); a cell (paper:
cell × subject) with SD 0 or one value has z = 0. :func:`paper_bias` returns the columns of
:func:`counterbench.stats.zbias.mab_mdb` plus ``max_abs_z`` (Table 4's "Max MAB").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from counterbench.stats.zbias import level_means, mab_mdb, zscore_within

CONVENTIONS = ("counterbench", "paper")


def paper_group_scores(frame: pd.DataFrame, cell_cols: Sequence[str], attributes: Mapping[str, Sequence[str]],
                       value_col: str = "y") -> pd.DataFrame:
    """Per cell × attribute × level: ``n``, raw mean, mean z (z within cell × subject), and the deviations
    from the paper's reference (0 in z; the cell's mean in raw units)."""
    strata = [*cell_cols, "subject"] if "subject" in frame.columns else list(cell_cols)
    base = frame.assign(z=zscore_within(frame, strata, value_col))
    base = base[base[value_col].notna()]
    base = base.assign(_cell_mean=base.groupby(list(cell_cols), sort=False, observed=True)[value_col]
                       .transform("mean"))
    table = level_means(base, cell_cols, attributes, value_col, cell_mean=("_cell_mean", "first"))
    columns = [*cell_cols, "attribute", "level", "n", "mean", "mean_z", "dev", "dev_z"]
    if table is None:
        return pd.DataFrame(columns=columns)
    table["dev"] = table["mean"] - table["cell_mean"]
    table["dev_z"] = table["mean_z"]
    return table[columns].reset_index(drop=True)


def paper_bias(scores: pd.DataFrame, cell_cols: Sequence[str]) -> pd.DataFrame:
    """Eq. 3–4 and Table 4's extreme group per cell × attribute from :func:`paper_group_scores`: the shared
    MAB/MDB (:func:`counterbench.stats.zbias.mab_mdb`) on scores whose ``dev_z`` is the level's own z (the
    paper centres MAB on 0), plus ``max_abs_z``."""
    out = mab_mdb(scores, cell_cols)
    out["max_abs_z"] = np.abs(pd.to_numeric(out["extreme_dev_z"], errors="coerce").to_numpy(np.float64))
    return out
