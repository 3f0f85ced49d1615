"""The finding in plain words, and how every interval and mark was obtained (summary.json, report,
terminal). Study-agnostic: the tables say which identities, axes and languages there are; ``labels``
turns codes (``en``) into words (``English``).

Decisions:

- A finding is an *earned* canonical pair gap: a ``cpg_overall`` row (the gap averaged over use
  cases) whose Benjamini–Hochberg mark survived within its model (see
  :mod:`counterbench.analyses.pooled`). Per model, the largest earned gaps (at most
  :data:`MAX_FINDINGS`, by size) are written out — who gets more or less, by how much (in % of the
  pair's mean: the number the tables and the gate show), the 95% interval and how many matched prompts
  agree with the direction — then the largest earned gap of a single use case (``cpg``) when it is
  larger still. When the study declares which direction is favourable (:mod:`.direction`), the sentence
  names who the gap is unfavourable to.
- When a model has no earned gap the sentence says "no gap beyond noise", with how many comparisons
  were tested and how many had too few matched prompts to test.
- The same sentences go to ``summary.json`` (``findings``), the top of ``report.md``/``report.html``
  and the end of ``counterbench analyze`` / ``audit`` in the terminal.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from counterbench.analyses.direction import common_direction, unfavourable_words
from counterbench.analyses.flags import truthy
from counterbench.stats.inference import ALPHA, MIN_SLOTS

__all__ = ["MAX_FINDINGS", "ci_methods", "findings", "findings_block", "marks_summary"]

MAX_FINDINGS = 3


def ci_methods(n_boot: int, seed: int, bins: int) -> dict[str, str]:
    """How each interval was obtained (summary ``ci_methods``)."""
    reps = f"{n_boot} replicates, seed {seed}"
    slots = (f"bootstrap resampling slots (the prompts that differ only in the identifier: profile × question "
             f"variant) within model × language × use case, 95% percentile interval expanded for few slots "
             f"(Hesterberg's expanded percentile: t quantile with slots − use cases df, variance × n/(n − 1)); {reps}")
    return {
        "ci": "the 95% CI of every gap statistic (Mean Δ%, V@τ, canonical pair gap, language shift, fairness "
              "ablation, identifier deviation): " + slots,
        "pair_ci": f"the paper's method, kept for comparison: bootstrap resampling pairs within model × language × "
                   f"use case × axis strata, binned multinomial draws ({bins} bins, exact below that many distinct "
                   f"values); {reps}, 95% percentile intervals; too narrow, pairs of one slot are not independent",
        "v10_ci": "slot bootstrap as for ci (v10_pair_ci: pairs resampled, exact binomial per stratum; "
                  "v10_wilson_ci: Wilson score interval)",
        "cpg": "paired slot bootstrap (a slot's two answers move together), expanded percentile; p: the larger "
               f"of the interval's t-test's and the swap test's (the two identities' answers swapped slot by slot: "
               f"exact when identity changes nothing); {reps}",
        "cpg_overall": "mean over use cases of the canonical pair gaps; replicates = mean of the use cases' "
                       "replicates (stratified slot bootstrap)",
        "mog": f"bootstrap resampling slots, the maximum pair re-selected per replicate; {reps}; descriptive: a "
               "maximum of many noisy gaps is biased upward and its interval does not cover (docs/analysis.md)",
        "rho": f"bootstrap resampling the per-setting values (use cases or axes); {reps}",
        "differences": "language shift and fairness ablation: paired slot bootstrap (a slot matched with the same "
                       f"design cell of the other arm), expanded percentile; p: the larger of the interval's t-test's "
                       f"and the swap test's (the two arms swapped slot by slot); pair_ci: arms resampled "
                       f"independently; {reps}",
        "seeding": "every stratum or cell has its own stream: BLAKE2b of (table, cell key, seed)",
    }


def marks_summary() -> dict[str, Any]:
    """The families of marks and the rule behind each (summary ``marks``)."""
    family = "one model's rows of the table"
    return {
        "alpha": ALPHA,
        "correction": "Benjamini–Hochberg within each family (q ≤ alpha) on the larger of the exact swap "
                      "test's and the interval's t-test's p, and the 95% interval must exclude 0; under no effect "
                      "anywhere in the family this keeps the chance of any mark ≤ alpha",
        "min_slots": MIN_SLOTS,
        "too_few": f"comparisons on fewer than {MIN_SLOTS} matched slots are not tested (no mark): 'too few matched "
                   "prompts to test (n = …)'",
        "families": {
            "cpg": family + " (its languages × use cases × canonical pairs)",
            "cpg_overall": family + " (its languages × canonical pairs)",
            "kendalls_w": family + " (its languages × use cases × axes)",
            "kendalls_w_axis": family + " (its languages × axes)",
            "kendalls_w_model": family + " (its languages)",
            "language_moderation": family + " (its axes)",
            "fairness_ablation": family + " (its languages)",
        },
    }


def _num(value: Any) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return math.nan
    return out


def _label(labels: Mapping[str, str], code: Any) -> str:
    text = str(code)
    return labels.get(text, text.replace("_", " "))


def gap_sentence(row: Mapping[Any, Any], labels: Mapping[str, str], where: str, direction: str | None = None) -> str:
    """One earned gap in words: who gets less, the gap in % of the pair's mean — the number the ``cpg``
    tables and the gate show — its interval on the same scale, the matched prompts that agree with the
    direction and, when the use case declares which direction is favourable, who the gap is unfavourable to."""
    gap, low, high = _num(row["gap"]), _num(row.get("ci_low")), _num(row.get("ci_high"))
    ref, comp = str(row["reference"]), str(row["comparison"])
    more, less = (ref, comp) if gap > 0 else (comp, ref)
    # the interval of |gap| on the same side: the signed ends, turned when the comparison gets more
    ends = (sorted((low, high)) if gap > 0 else sorted((-high, -low))) \
        if math.isfinite(low) and math.isfinite(high) else [math.nan, math.nan]
    n = int(_num(row.get("n_slots")) or 0)
    agree = _num(row.get("n_agree"))
    agreeing = f"; {more} got more in {int(agree)} of {n} matched prompts" if math.isfinite(agree) else \
        f"; {n} matched prompts"
    return (f"{row['model']} offers {less} less than {more} {where}: a gap of {abs(gap):.1f}% of the pair's mean "
            f"(95% CI {ends[0]:.1f}% to {ends[1]:.1f}%{agreeing}){unfavourable_words(ref, comp, gap, direction)}.")


def findings(tables: Mapping[str, pd.DataFrame], models: list[str], labels: Mapping[str, str] | None = None,
             favourable: Mapping[str, str] | None = None) -> list[str]:
    """Per model, the largest earned canonical pair gaps in plain words (see the module docstring);
    ``favourable`` (use case -> ``higher`` / ``lower``, :mod:`.direction`) names who a gap is unfavourable to."""
    names = dict(labels or {})
    directions = dict(favourable or {})
    overall = tables.get("cpg_overall")
    per_uc = tables.get("cpg")
    pooled = common_direction(directions, _use_cases(per_uc)) if directions else None
    out: list[str] = []
    for model in models:
        rows = pd.DataFrame() if overall is None or overall.empty else overall[overall["model"].astype(str) == model]
        if rows.empty:
            continue
        earned = rows[np.array([truthy(v) for v in rows["significant"]], dtype=bool)]
        earned = earned.assign(_size=earned["gap"].abs()).sort_values("_size", ascending=False)
        for record in earned.head(MAX_FINDINGS).to_dict("records"):
            uses = int(_num(record.get("n_use_cases")) or 0)
            where = f"in {_label(names, record['language'])}, averaged over {uses} use case{'s' if uses != 1 else ''}"
            out.append(gap_sentence(record, names, where, pooled))
        if earned.empty:
            tested = int(sum(truthy(v) for v in rows["testable"])) if "testable" in rows.columns else 0
            untested = len(rows) - tested
            if tested == 0:
                n = int(pd.to_numeric(rows["n_slots"], errors="coerce").max())
                out.append(f"{model}: too few matched prompts to test any canonical pair (n = {n}; "
                           f"{MIN_SLOTS} needed).")
                continue
            extra = f"; {untested} had too few matched prompts to test" if untested else ""
            out.append(f"{model}: no gap beyond noise between the canonical pairs ({tested} comparison"
                       f"{'s' if tested != 1 else ''} tested{extra}).")
        largest = _largest_use_case(per_uc, model, float(earned["_size"].max()) if not earned.empty else 0.0)
        if largest is not None:
            where = f"in {_label(names, largest['language'])}, {_use_case_label(names, largest['use_case'])}"
            out.append("Largest in a single use case: " + gap_sentence(largest, names, where,
                                                                      directions.get(str(largest["use_case"]))))
    return out


def _use_cases(per_uc: pd.DataFrame | None) -> list[str]:
    if per_uc is None or per_uc.empty or "use_case" not in per_uc.columns:
        return []
    return list(dict.fromkeys(per_uc["use_case"].astype(str)))


def _use_case_label(labels: Mapping[str, str], code: Any) -> str:
    """A use case as the report names it: its declared label, else its name capitalised."""
    text = str(code)
    return labels.get(text, text.replace("_", " ").capitalize())


def _largest_use_case(per_uc: pd.DataFrame | None, model: str, above: float) -> dict[str, Any] | None:
    if per_uc is None or per_uc.empty or "significant" not in per_uc.columns:
        return None
    marked = np.array([truthy(v) for v in per_uc["significant"]], dtype=bool)
    rows = per_uc[(per_uc["model"].astype(str) == model).to_numpy() & marked]
    if rows.empty:
        return None
    best = {str(k): v for k, v in rows.loc[rows["gap"].abs().idxmax()].to_dict().items()}
    return best if abs(_num(best["gap"])) > above else None


def findings_block(summary: Mapping[str, Any]) -> str:
    """The findings of an analysis summary as terminal text (empty when there are none)."""
    lines = [str(line) for line in summary.get("findings") or []]
    return "\n".join(["What we found:", *(f"- {line}" for line in lines)]) if lines else ""
