"""Explanations cut at the token limit: how many per attribute level, and whether they move the gaps.

The paper scores an explanation that exhausts its 512-token budget on the text received (its Figure 2's
Profile B); so does this study by default (``truncated="score"``), and ``truncated="drop"`` leaves them
out. If one group's explanations run longer, they hit the limit more often, and dropping them removes
that group's longest (often hardest) texts — a bias in the study's main quantity. These tables let a
reader see whether truncation matters:

- :func:`truncation_table` — per model × context × dataset × attribute × level of the generation task
  (main experiment): answers with a text (``ok`` or ``truncated``), how many were cut, the share;
- :func:`sensitivity_table` — per model × context × dataset × attribute: the gap between the highest and
  lowest level's mean MGL (MDB in grade levels, and in z) with the cut explanations scored and with
  them dropped, side by side, and the change.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from counterbench.builtin.stem.analysis import CELL, bias_tables, context_attributes

KEYS = ("model", "context", "dataset")


def _generation(frame: pd.DataFrame) -> pd.DataFrame:
    rows = frame[frame["task"].astype(str).eq("generation") & frame["experiment"].astype(str).eq("main")]
    return rows[rows["status"].astype(str).isin(["ok", "truncated"])]


def dropped(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (an :func:`~counterbench.builtin.stem.analysis.outcome_frame`) with the cut explanations
    left out (``y`` NaN)."""
    if "truncated" not in frame.columns:
        return frame
    cut = frame["truncated"].astype(bool).to_numpy()
    return frame.assign(y=np.where(cut, np.nan, frame["y"].to_numpy(np.float64)))


def truncation_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Answers, cut answers and their share per attribute level (see module docstring); empty when none
    was cut."""
    rows = _generation(frame)
    if rows.empty or "truncated" not in rows.columns or not rows["truncated"].astype(bool).any():
        return pd.DataFrame()
    out = []
    for key, part in rows.groupby(list(KEYS), sort=True, observed=True):
        ident = dict(zip(KEYS, (str(k) for k in key), strict=True))
        cut = part["truncated"].astype(bool)
        out.append({**ident, "attribute": "(all)", "level": "", "n": len(part), "n_truncated": int(cut.sum()),
                    "share": float(cut.mean())})
        for attribute, levels in context_attributes(ident["context"]).items():
            for level in levels:
                sel = part[attribute].astype(str).eq(level)
                if sel.any():
                    out.append({**ident, "attribute": attribute, "level": level, "n": int(sel.sum()),
                                "n_truncated": int(cut[sel].sum()), "share": float(cut[sel].mean())})
    return pd.DataFrame(out)


def sensitivity_table(frame: pd.DataFrame) -> pd.DataFrame:
    """MDB per attribute with the cut explanations scored and dropped (see module docstring); ``frame``
    must score them (``truncated="score"``). Empty when none was cut."""
    rows = frame[frame["task"].astype(str).eq("generation")]
    if rows.empty or "truncated" not in rows.columns or not rows["truncated"].astype(bool).any():
        return pd.DataFrame()
    keys = [*CELL, "attribute"]
    both = []
    for name, data in (("scored", rows), ("dropped", dropped(rows))):
        bias = bias_tables(data)[1]
        if bias.empty:
            return pd.DataFrame()
        both.append(bias[[*keys, "mdb", "mdb_z"]].rename(columns={"mdb": f"mdb_{name}", "mdb_z": f"mdb_z_{name}"}))
    out = both[0].merge(both[1], on=keys, how="left")
    out["change"] = out["mdb_dropped"] - out["mdb_scored"]
    return out.sort_values("mdb_scored", ascending=False, kind="mergesort").reset_index(drop=True)
