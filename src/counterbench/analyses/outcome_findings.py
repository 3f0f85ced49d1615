"""The outcome tables' marks and finding in words (summary ``marks`` and ``findings``) for the outcome
kinds other than ``amount`` (:mod:`.outcome_tables`). Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from counterbench.stats.inference import ALPHA, MIN_SLOTS

__all__ = ["marks_summary", "outcome_findings"]


def marks_summary() -> dict[str, Any]:
    """The families of the outcome tables' marks and the rule behind them (summary ``marks``)."""
    from counterbench.analyses.findings import marks_summary as amount_marks

    family = "one model's rows of the table"
    return {**{k: v for k, v in amount_marks().items() if k != "families"},
            "rule": "BH q ≤ alpha within the family and the 95% interval excludes 0; p from the swap test "
                    "(crossed_regression: t with clusters − 1 degrees of freedom)",
            "families": {"outcome_gaps": family + " (its use cases × languages × facets × identities)",
                         "language_gaps": family + " (its use cases × facets × identities × languages)",
                         "crossed_regression": family + " (its outcome kinds × languages × attribute levels)"}}


def outcome_findings(gaps: pd.DataFrame, labels: Mapping[str, str] | None = None, most: int = 3) -> list[str]:
    """Per model, the largest earned matched gaps in plain words (relative size first), or "no gap
    beyond noise" with how many comparisons were tested — the same sentences as the report's top."""
    from counterbench.analyses.flags import truthy

    names = dict(labels or {})
    out: list[str] = []
    for model, rows in ([] if gaps is None or gaps.empty else gaps.groupby("model", sort=False)):
        earned = rows[[truthy(v) for v in rows["significant"]]]
        size = pd.to_numeric(earned["relative_pct"], errors="coerce").abs()
        earned = earned.assign(_size=size.fillna(pd.to_numeric(earned["difference"], errors="coerce").abs()))
        for r in earned.sort_values("_size", ascending=False).head(most).to_dict("records"):
            where = f"{r['facet']}; {names.get(str(r['use_case']), r['use_case'])}, " \
                    f"{names.get(str(r['language']), r['language'])}"
            out.append(f"{model}: {r['comparison']} gets {r['comparison_mean']:.3g} on average against "
                       f"{r['reference_mean']:.3g} for {r['reference']} ({where}), {r['difference']:+.2f} "
                       f"{r['difference_unit']} "
                       f"(95% CI {r['ci_low']:+.2f} to {r['ci_high']:+.2f}; {int(r['n_slots'])} matched prompts).")
        if earned.empty:
            tested = int(sum(truthy(v) for v in rows["testable"]))
            if tested == 0:
                n = int(pd.to_numeric(rows["n_slots"], errors="coerce").max())
                out.append(f"{model}: too few matched prompts to test any comparison (n = {n}; {MIN_SLOTS} needed).")
                continue
            few = len(rows) - tested
            extra = f"; {few} had too few matched prompts to test" if few else ""
            # the swap test's smallest p is 2/2ⁿ and BH's first mark needs p ≤ alpha/m
            need = int(np.ceil(np.log2(2 * tested / ALPHA)))
            most = int(pd.to_numeric(rows["n_slots"], errors="coerce").max())
            if most < need:
                extra += (f"; with at most {most} matched prompts per comparison no gap among {tested} could be "
                          f"marked, whatever its size ({need} needed)")
            out.append(f"{model}: no gap beyond noise ({tested} comparison{'s' if tested != 1 else ''} "
                       f"tested{extra}).")
    return out
