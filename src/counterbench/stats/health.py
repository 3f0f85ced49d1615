"""Parse health and refusal rate (paper App. L, Table 22; spec ``rupeebias.md`` §3).

Parse health = % of responses with a parsed value; refusal rate = % of responses with status
``refused``; per group (e.g. model × use case × language), with Wilson 95% intervals and the raw
counts of every status.

Decisions:

- A response "has a value" when ``value`` is not NaN (whatever its status).
- Transport/API failures (status ``error``) are not model responses: by default they are excluded
  from the denominators and only counted (``n_error``); ``include_errors=True`` counts them in.
- Answers that did not finish — ``truncated`` (cut at the token limit), ``filtered`` (withheld by
  a content filter), ``empty`` (a blank reply, every attempt) — are model responses: they count in
  the denominator, each status in its own column (``n_truncated``, ``n_filtered``, ``n_empty``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from counterbench.stats.intervals import wilson_interval

__all__ = ["UNFINISHED", "parse_health"]

#: statuses of answers that did not finish (each gets an ``n_<status>`` count)
UNFINISHED: tuple[str, ...] = ("truncated", "filtered", "empty")


def parse_health(
    frame: pd.DataFrame,
    by: Sequence[str],
    status_col: str = "status",
    value_col: str = "value",
    *,
    include_errors: bool = False,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Per group: counts per status, ``pct_value`` and ``pct_refused`` with Wilson intervals (in %).

    ``n_rows`` counts all rows, ``n_responses`` the denominator (rows without ``error`` unless
    ``include_errors``); ``n_value`` / ``n_refused`` count within the denominator.
    """
    cols = list(by)
    missing = [c for c in [*cols, status_col, value_col] if c not in frame.columns]
    if missing:
        raise ValueError(f"parse_health: columns {missing} are not in the frame")
    status = frame[status_col].astype("string").fillna("")
    is_error = (status == "error").to_numpy(dtype=bool)
    counted_rows = np.ones(len(frame), dtype=bool) if include_errors else ~is_error
    work = pd.DataFrame(
        {
            **{c: frame[c].to_numpy() for c in cols},
            "n_rows": np.ones(len(frame), dtype=np.int64),
            "n_responses": counted_rows.astype(np.int64),
            "n_value": (frame[value_col].notna().to_numpy(dtype=bool) & counted_rows).astype(np.int64),
            "n_refused": ((status == "refused").to_numpy(dtype=bool) & counted_rows).astype(np.int64),
            "n_unparseable": (status == "unparseable").to_numpy(dtype=np.int64),
            **{f"n_{name}": (status == name).to_numpy(dtype=np.int64) for name in UNFINISHED},
            "n_error": is_error.astype(np.int64),
        }
    )
    counted = ["n_rows", "n_responses", "n_value", "n_refused", "n_unparseable",
               *(f"n_{name}" for name in UNFINISHED), "n_error"]
    if cols:
        out = work.groupby(cols, sort=True, observed=True, dropna=False)[counted].sum().reset_index()
    else:
        out = work[counted].sum().to_frame().T.reset_index(drop=True)
    out[counted] = out[counted].astype(np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        for name in ("value", "refused"):
            k = out[f"n_{name}"].to_numpy(dtype=np.float64)
            n = out["n_responses"].to_numpy(dtype=np.float64)
            low, high = wilson_interval(k, n, confidence)
            out[f"pct_{name}"] = np.where(n > 0, k * 100.0 / n, np.nan)
            out[f"pct_{name}_low"] = low * 100.0
            out[f"pct_{name}_high"] = high * 100.0
    return out
