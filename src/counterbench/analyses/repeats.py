"""Repeated answers (``--repeats K``): a prompt's repeats averaged first, before any table sees them.

A run with ``--repeats K`` stores K answers per prompt (``repeat`` 0 … K−1, :mod:`counterbench.run.plan`). The
independent unit of every table stays the slot, and within a slot the prompt: a prompt answered K times is
one observation whose value is the mean of its usable repeats (a label's or choice's measure, 100 ×
"selected", becomes the share of its repeats that selected). So every interval, swap test and mark reads
one number per prompt, as without repeats, and a prompt with fewer usable repeats weighs the same as one
with all of them. The amount tables average the same way (the analysis profile's duplicate rule,
:mod:`.prepare`). A results frame without a ``repeat`` column, or with repeat 0 only, is left as it is.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["has_repeats", "within_prompt_means"]


def has_repeats(frame: pd.DataFrame) -> bool:
    """Whether ``frame`` holds a later repeat (``repeat`` ≥ 1) of any prompt."""
    return "repeat" in frame.columns and not frame.empty and bool((frame["repeat"].fillna(0) > 0).any())


def _prompt_keys(rows: pd.DataFrame) -> list[str]:
    """One answer's identity without its repeat: the model and prompt (and a choice row's offered option)."""
    return ["model", "prompt_id", *(["position"] if "position" in rows.columns else [])]


def within_prompt_means(rows: pd.DataFrame) -> pd.DataFrame:
    """Measured rows (``y``, :func:`counterbench.analyses.outcome_tables.measured_rows`) with one row per prompt
    (per offered option for a choice between identities): ``y`` the mean of its repeats' ``y``; the other columns
    of its lowest repeat's row, in that row's place. Rows without later repeats are returned unchanged."""
    if not has_repeats(rows) or "prompt_id" not in rows.columns:
        return rows
    keys = _prompt_keys(rows)
    codes = rows[keys].astype(str).groupby(keys, sort=False, dropna=False).ngroup().to_numpy(np.int64)
    n = int(codes.max()) + 1
    sums = np.bincount(codes, weights=rows["y"].to_numpy(np.float64), minlength=n)
    counts = np.bincount(codes, minlength=n)
    # each prompt's row of its lowest repeat stands for it, where that row stands: the rows of a run without
    # repeats, in their order (the bootstrap's and the swap test's draws follow the rows' order)
    order = np.lexsort((np.arange(len(rows)), rows["repeat"].fillna(0).to_numpy(np.float64), codes))
    first = np.zeros(len(rows), dtype=bool)
    first[order[np.r_[True, codes[order][1:] != codes[order][:-1]]]] = True
    out = rows[first].copy()
    out["y"] = (sums / counts)[codes[first]]
    out["repeat"] = 0
    return out.reset_index(drop=True)
