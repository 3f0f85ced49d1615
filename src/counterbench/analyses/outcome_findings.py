"""The outcome tables' marks and finding in words (summary ``marks`` and ``findings``) for every outcome
kind (:mod:`.outcome_tables`; amount studies add these to the canonical-pair finding). Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from counterbench.analyses.direction import unfavourable_words
from counterbench.outcomes import get_kind
from counterbench.outcomes.base import Comparison, OutcomeSpec, comparison_of
from counterbench.stats.inference import ALPHA, MIN_SLOTS

__all__ = ["marks_summary", "outcome_findings"]


def _comparison(row: Mapping[Any, Any], outcomes: Mapping[str, OutcomeSpec] | None) -> Comparison:
    """The row's kind's comparison (its use case's outcome); a row of an unknown use case is a difference
    in the row's own unit."""
    spec = (outcomes or {}).get(str(row.get("use_case")))
    if spec is not None:
        return comparison_of(get_kind(spec.kind), spec)
    unit = str(row.get("difference_unit") or "")
    return Comparison("difference", f" {unit}" if unit else "", unit, directions=("higher", "lower"))


def marks_summary() -> dict[str, Any]:
    """The families of the outcome tables' marks and the rule behind them (summary ``marks``)."""
    from counterbench.analyses.findings import marks_summary as amount_marks

    family = "one model's rows of the table"
    return {**{k: v for k, v in amount_marks().items() if k != "families"},
            "rule": "BH q ≤ alpha within the family and the 95% interval excludes 0; p from the swap test "
                    "(crossed_regression: t with clusters − 1 degrees of freedom)",
            "families": {"outcome_gaps": family + " (its use cases × languages × facets × identities)",
                         "language_gaps": family + " (its use cases × facets × identities × languages)",
                         "crossed_regression": family + " (its outcome kinds × languages × attribute levels)",
                         "group_gaps_over_names": family + " (its use cases × languages × groups; Welch's t over "
                                                           "names)"}}


def outcome_findings(gaps: pd.DataFrame, labels: Mapping[str, str] | None = None, most: int = 3,
                     outcomes: Mapping[str, OutcomeSpec] | None = None,
                     favourable: Mapping[str, str] | None = None) -> list[str]:
    """Per model, the largest earned matched gaps in plain words, in each kind's unit and words
    (:meth:`OutcomeKind.comparison`; ``outcomes``: use case -> its outcome), group comparisons first,
    then by relative size: the ``most`` largest of a study with one use case, the largest of each use case
    otherwise (their units differ) — or "no gap beyond noise" with how many comparisons were tested. The gap
    is the table's ``difference`` (for amounts % of the pair's mean), the number the gate shows; a use case
    named in ``favourable`` (use case -> ``higher`` / ``lower``) also says who the gap is unfavourable to."""
    from counterbench.analyses.flags import truthy

    names = dict(labels or {})
    out: list[str] = []
    for model, rows in ([] if gaps is None or gaps.empty else gaps.groupby("model", sort=False)):
        earned = rows[[truthy(v) for v in rows["significant"]]]
        size = pd.to_numeric(earned["relative_pct"], errors="coerce").abs()
        earned = earned.assign(_size=size.fillna(pd.to_numeric(earned["difference"], errors="coerce").abs()),
                               _group=earned["facet_kind"].astype(str).ne("group"))
        # gaps of different use cases are in different units: the largest of each use case (``most`` of a
        # study's only use case), in the study's order of use cases
        ranked = earned.sort_values(["_group", "_size"], ascending=[True, False], kind="stable")
        cases = list(dict.fromkeys(rows["use_case"].astype(str)))
        per_case = most if len(cases) == 1 else 1
        chosen = [r for case in cases
                  for r in ranked[ranked["use_case"].astype(str) == case].head(per_case).to_dict("records")]
        for r in chosen:
            these = ", for these names" if str(r.get("facet_kind")) == "group" else ""  # names not a sample
            case = str(r["use_case"])
            where = f"{r['facet']}{these}; {names.get(case, case.replace('_', ' ').capitalize())}, " \
                    f"{names.get(str(r['language']), r['language'])}"
            compare = _comparison(r, outcomes)
            words = compare.words(str(model), str(r["comparison"]), str(r["reference"]), float(r["difference"]))
            means = compare.means(float(r["comparison_mean"]), float(r["reference_mean"]))
            against = unfavourable_words(str(r["comparison"]), str(r["reference"]), float(r["difference"]),
                                         (favourable or {}).get(case))
            out.append(f"{words} ({means}; {where}; 95% CI {compare.format(float(r['ci_low']))} to "
                       f"{compare.format(float(r['ci_high']))}; {int(r['n_slots'])} matched prompts){against}.")
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
            largest = int(pd.to_numeric(rows["n_slots"], errors="coerce").max())
            if largest < need:
                extra += (f"; with at most {largest} matched prompts per comparison no gap among {tested} could be "
                          f"marked, whatever its size ({need} needed)")
            out.append(f"{model}: no gap beyond noise ({tested} comparison{'s' if tested != 1 else ''} "
                       f"tested{extra}).")
    return out
