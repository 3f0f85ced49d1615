"""Parse health and refusal rates (paper App. L, Table 22; spec §3), from
:func:`counterbench.stats.health.parse_health`.

One row per model × prompt variant × use case × language over *every* stored response (duplicates
included). Counts: ``n`` (all rows), ``n_ok`` (a value was parsed), ``n_refused``,
``n_unparseable``, the answers that did not finish — ``n_truncated`` (cut off at the token limit),
``n_filtered`` (withheld by a content filter), ``n_empty`` (blank at every attempt); none of them
enters an analysis, and ``--retry-errors`` sends them again — ``errors`` (transport/API failures,
never parsed), ``n_out_of_range`` (values outside the parser's plausibility bounds), ``n_values``
(values that enter the analyses under the profile). Shares are fractions of the *model's answers*,
i.e. of ``n − errors`` (a transport failure is not an answer), except ``error_share`` = errors / n;
``unfinished_share`` is (truncated + filtered + empty) / answers, so ok, refused, unparseable and
unfinished shares add up to 1. ``ok_share`` is the paper's "parse
health", ``refused_share`` its "refusal rate"; both come with Wilson 95% intervals. A model-level
figure is the sum of the counts over rows divided by the sum of ``n − errors``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from counterbench.stats.health import UNFINISHED
from counterbench.stats.health import parse_health as stats_parse_health

__all__ = ["parse_health"]

KEYS = ["model", "variant", "use_case", "language"]


def parse_health(responses: pd.DataFrame) -> pd.DataFrame:
    """Counts and shares per model × variant × use case × language (see module docstring)."""
    base = stats_parse_health(responses, KEYS)
    extra = responses.assign(
        is_oor=(responses["status"] == "ok") & responses["out_of_range"].astype(bool),
    ).groupby(KEYS, sort=True, observed=True, dropna=False).agg(
        n_out_of_range=("is_oor", "sum"), n_values=("usable", "sum"))
    out = base.join(extra, on=KEYS)
    answers = out["n_responses"].where(out["n_responses"] > 0)
    out = out.rename(columns={"n_rows": "n", "n_value": "n_ok", "n_error": "errors"})
    for col in ("n_out_of_range", "n_values"):
        out[col] = out[col].fillna(0).astype(np.int64)
    out["ok_share"] = out["n_ok"] / answers
    out["refused_share"] = out["n_refused"] / answers
    out["unparseable_share"] = out["n_unparseable"] / answers
    out["unfinished_share"] = out[[f"n_{name}" for name in UNFINISHED]].sum(axis=1) / answers
    out["out_of_range_share"] = out["n_out_of_range"] / answers
    out["error_share"] = out["errors"] / out["n"].where(out["n"] > 0)
    out["ok_share_ci_low"], out["ok_share_ci_high"] = out["pct_value_low"] / 100.0, out["pct_value_high"] / 100.0
    out["refused_share_ci_low"] = out["pct_refused_low"] / 100.0
    out["refused_share_ci_high"] = out["pct_refused_high"] / 100.0
    return out.drop(columns=[c for c in out.columns if c.startswith("pct_") or c == "n_responses"])
