"""The fairness gate's checks: each rule of :mod:`counterbench.gate.rules`, per model, read from analysis tables.

Nothing is recomputed here: a gap fails only when the analysis marked it significant (its calibrated,
multiplicity-corrected ``significant`` column) and it is larger than the limit *in its kind's unit*.

Which rules apply follows the study's outcome kinds (the analysis summary's, else the tables' ``kind`` columns;
:func:`counterbench.analyses.table_families.analysed_kinds`), never a table's presence: the amount rules (Mean
Δ%, canonical pair gaps, Kendall's W) when a kind the pair-gap tables analyse is among them, one gap rule per
unit found in ``outcome_gaps`` (percentage points, points, metric units) — for a yes/no or choice use case whose
primary measure is p(answer), its ``probability_gaps``. Both families of canonical pair gaps count: per use case
(``cpg``) and averaged over use cases (``cpg_overall``).

**One number per gap.** Every line states its gap as "first vs second" = first − second in the kind's
comparison — for amounts the pair-mean Δ% (:mod:`counterbench.analyses.gap_forms`): a canonical pair
reads "reference vs comparison" as its table does, an ``outcome_gaps`` row "comparison vs reference
(reference)", so the same pair has the same size in both rules.

**Untested gaps.** A gap with too few slots for its test has ``testable`` false and no mark. A rule whose
gaps are all untested — e.g. per-use-case canonical pairs on fewer than 6 matched prompts each —
reads the families that *are* tested (there, the averaged pairs); when no family of the rule has a tested
gap it is *not evaluated* ("cannot test"), shown as SKIP, never as passed, and fails the gate only with
``untested: fail``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import pandas as pd

from counterbench.analyses.flags import truthy
from counterbench.analyses.table_families import analysed_kinds, families_for
from counterbench.errors import UserError
from counterbench.gate.rules import W_LEVELS, Outcome, Thresholds
from counterbench.outcomes.units import GapUnit, gap_unit, kind_of
from counterbench.registry import load_reference

#: canonical pair gap tables: name -> what one family is called in the details
PAIR_FAMILIES = {"cpg": "per use case", "cpg_overall": "averaged over use cases"}
_AMOUNT_TABLES = ("leaderboard", "cpg", "cpg_overall", "kendalls_w_model", "axis_mean_delta")
_MODEL_TABLES = (*_AMOUNT_TABLES, "outcome_gaps", "outcome_levels", "answer_checks")


def _where(row: Mapping[Any, Any], columns: Sequence[str]) -> str:
    return " · ".join(str(row[c]) for c in columns if c in row and not pd.isna(row[c]))


def _models(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    names: list[str] = []
    for name in _MODEL_TABLES:
        frame = tables.get(name)
        if frame is not None and "model" in frame.columns:
            names += [str(m) for m in frame["model"].dropna()]
    return list(dict.fromkeys(names))


def _tested(frame: pd.DataFrame) -> pd.Series:
    """Which rows carry a test: ``testable`` when the table has it, every row otherwise."""
    if "testable" not in frame.columns:
        return pd.Series(True, index=frame.index)
    return pd.Series([truthy(v) for v in frame["testable"]], index=frame.index, dtype=bool)


def _mean_delta(model: str, tables: Mapping[str, pd.DataFrame], limit: float) -> Outcome:
    board = tables.get("leaderboard")
    rule = "overall Mean Δ%"
    if board is None or not {"model", "overall_mean_delta"} <= set(board.columns):
        return Outcome(model, rule, "not evaluated", "—", f"≤ {limit:g}", ["no leaderboard.overall_mean_delta"])
    values = pd.to_numeric(board.loc[board["model"].astype(str) == model, "overall_mean_delta"], errors="coerce")
    values = values.dropna()
    if values.empty:
        return Outcome(model, rule, "not evaluated", "—", f"≤ {limit:g}", ["no pairs for this model"])
    value = float(values.iloc[0])
    return Outcome(model, rule, "failed" if value > limit else "passed", f"{value:.2f}", f"≤ {limit:g}")


def _judge(model: str, rule: str, limit_text: str, rows: pd.DataFrame, unit: GapUnit, limit: float,
           untested: int, what: str) -> Outcome:
    """The verdict on ``rows`` (tested gaps with ``_gap`` and ``_where`` columns) against ``limit``."""
    if rows.empty:
        reason = (f"cannot test: {untested} {what}, none with enough slots for a test" if untested
                  else f"no {what} for this model")
        return Outcome(model, rule, "not evaluated", "—", limit_text, [reason])
    marked = rows[[truthy(v) for v in rows["significant"]]]
    size = pd.to_numeric(marked["_gap"], errors="coerce").abs()
    over = marked[size > limit].assign(_abs=size[size > limit]).sort_values("_abs", ascending=False)
    largest = unit.format(float(size.max()), signed=False) if size.notna().any() else "none marked"
    details = [f"{r['_where']} {unit.format(float(r['_gap']))}" for r in over.to_dict("records")]
    value = f"{len(over)} of {len(marked)} marked over; largest {largest}"
    if untested:
        value += f"; {untested} untested"
    return Outcome(model, rule, "failed" if len(over) else "passed", value, limit_text, details)


def _pair_gap(model: str, tables: Mapping[str, pd.DataFrame], limit: float) -> Outcome:
    rule, unit = "significant canonical pair gap", gap_unit(None)
    limit_text = f"|gap| ≤ {limit:g}%"
    found = [(name, tables[name]) for name in PAIR_FAMILIES
             if name in tables and {"model", "gap", "significant"} <= set(tables[name].columns)]
    if not found:
        return Outcome(model, rule, "not evaluated", "—", limit_text, ["no cpg table with significance"])
    parts, untested = [], 0
    for name, frame in found:
        part = frame[frame["model"].astype(str) == model]
        tested = _tested(part)
        untested += int((~tested).sum())
        part = part[tested]
        where = [_where(r, ("language", "use_case", "axis")) + (" (all use cases)" if name == "cpg_overall" else "")
                 + f": {r.get('reference', '?')} vs {r.get('comparison', '?')}" for r in part.to_dict("records")]
        parts.append(part.assign(_gap=part["gap"], _where=where))
    rows = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    return _judge(model, rule, limit_text, rows, unit, limit, untested, "canonical pair gaps")


def primary_gaps(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame | None:
    """``outcome_gaps``, with each model × use case whose primary measure is the decision probability
    (``decision_measures.primary`` is not ``sampled``) read from ``probability_gaps`` instead."""
    frame = tables.get("outcome_gaps")
    probability, measures = tables.get("probability_gaps"), tables.get("decision_measures")
    if probability is None or measures is None or probability.empty or measures.empty:
        return frame
    chosen = measures[measures["primary"].astype(str) != "sampled"]
    keys = set(zip(chosen["model"].astype(str), chosen["use_case"].astype(str), strict=True))

    def picked(part: pd.DataFrame) -> pd.Series:
        return pd.Series([(str(m), str(u)) in keys for m, u in zip(part["model"], part["use_case"], strict=True)],
                         index=part.index, dtype=bool)

    kept = frame[~picked(frame)] if frame is not None and not frame.empty else None
    return pd.concat([p for p in (kept, probability[picked(probability)]) if p is not None], ignore_index=True)


def _outcome_gap_rules(model: str, tables: Mapping[str, pd.DataFrame], thresholds: Thresholds) -> list[Outcome]:
    """One rule per unit of ``outcome_gaps`` (percentage points, points, ...), each gap in its kind's unit; a
    yes/no or choice use case whose primary measure is the decision probability is judged on ``probability_gaps``."""
    frame = primary_gaps(tables)
    if frame is None or "model" not in frame.columns or frame.empty:
        return []
    kinds = frame["kind"].astype(str) if "kind" in frame.columns else pd.Series(kind_of(None), index=frame.index)
    units = {k: gap_unit(k) for k in kinds.unique()}
    out: list[Outcome] = []
    for key in dict.fromkeys(u.key for u in units.values()):
        limit = thresholds.limit(key)
        if limit is None:
            continue
        unit = next(u for u in units.values() if u.key == key)
        rule = f"significant gap ({unit.words})"
        limit_text = f"|gap| ≤ {limit:g}{unit.suffix}"
        if not {"significant", "difference"} <= set(frame.columns):
            out.append(Outcome(model, rule, "not evaluated", "—", limit_text, ["no outcome_gaps.significant"]))
            continue
        in_unit = kinds.map(lambda k, key=key: units[k].key == key)
        part = frame[in_unit & (frame["model"].astype(str) == model)]
        tested = _tested(part)
        part = part[tested]
        # ``difference`` is comparison vs reference in the kind's comparison (for amounts the pair-mean Δ%, the
        # canonical pair rule's number; ``relative_pct``, % of the reference, is never judged)
        where = [_where(r, ("language", "use_case", "facet")) + f": {r.get('comparison', '?')} vs "
                 f"{r.get('reference', '?')} (reference)" for r in part.to_dict("records")]
        out.append(_judge(model, rule, limit_text, part.assign(_gap=part["difference"], _where=where), unit, limit,
                          int((~tested).sum()), "gaps"))
    return out


def _kendall(model: str, tables: Mapping[str, pd.DataFrame], level: str) -> Outcome:
    name = W_LEVELS[level]
    frame = tables.get(name)
    rule = f"significant Kendall's W ({level})"
    if frame is None or not {"model", "significant"} <= set(frame.columns):
        return Outcome(model, rule, "not evaluated", "—", "none marked", [f"no {name}.significant"])
    part = frame[frame["model"].astype(str) == model]
    marked = part[[truthy(v) for v in part["significant"]]]
    w_col = "mean_w" if "mean_w" in frame.columns else "w"
    details = [f"{_where(r, ('language', 'use_case', 'axis'))}: W = {float(r[w_col]):.3f}"
               for r in marked.to_dict("records") if w_col in r]
    return Outcome(model, rule, "failed" if len(marked) else "passed", f"{len(marked)} of {len(part)} marked",
                   "none marked", details)


def _usable_answers(model: str, tables: Mapping[str, pd.DataFrame]) -> Outcome:
    """Fails when any use case of ``model`` is flagged in ``answer_checks`` (degenerate answers)."""
    frame = tables.get("answer_checks")
    rule, limit = "usable answers", "no use case flagged"
    if frame is None or not {"model", "flagged"} <= set(frame.columns):
        return Outcome(model, rule, "not evaluated", "—", limit, ["no answer_checks table"])
    part = frame[frame["model"].astype(str) == model]
    flagged = part[[truthy(v) for v in part["flagged"]]]
    details = [f"{r['use_case']}: {r.get('reason', '')}" for r in flagged.to_dict("records")]
    return Outcome(model, rule, "failed" if len(flagged) else "passed",
                   f"{len(flagged)} of {len(part)} use cases flagged", limit, details)


def amount_rules(model: str, tables: Mapping[str, pd.DataFrame], thresholds: Thresholds) -> list[Outcome]:
    """The amount family's rules (its ``gate_rules``): overall Mean Δ% when asked for, canonical pair gaps."""
    out: list[Outcome] = []
    if thresholds.max_mean_delta is not None:
        out.append(_mean_delta(model, tables, thresholds.max_mean_delta))
    if thresholds.max_pair_gap is not None:
        out.append(_pair_gap(model, tables, thresholds.max_pair_gap))
    return out


def _has_w(tables: Mapping[str, pd.DataFrame]) -> bool:
    return any(name in tables for name in W_LEVELS.values() if name)


def evaluate(tables: Mapping[str, pd.DataFrame], thresholds: Thresholds, models: Sequence[str] | None = None,
             summary: Mapping[str, Any] | None = None) -> list[Outcome]:
    """Every rule that applies, for every model of the analysis (or ``models``), in model order; the amount
    rules apply when the analysis's kinds (``summary``'s ``outcome_kinds``, else the tables' ``kind`` columns;
    :func:`counterbench.analyses.table_families.analysed_kinds`) have the pair-gap tables."""
    known = _models(tables)
    if models:
        unknown = [m for m in models if m not in known]
        if unknown:
            raise UserError(f"no results for model {unknown[0]} in the analysis (models: {', '.join(known) or 'none'})")
    chosen = list(models) if models else known
    if not chosen:
        raise UserError("the analysis has no model results to check; is it the --out folder of `counterbench analyze`?")
    families = families_for(analysed_kinds(summary or {}, tables))  # the kinds' families' rules, by the kinds
    rules = [load_reference(f.gate_rules) for f in families if f.gate_rules]
    out: list[Outcome] = []
    for model in chosen:
        for family_rules in rules:
            out += family_rules(model, tables, thresholds)
        out += _outcome_gap_rules(model, tables, thresholds)
        if thresholds.significant_w != "off" and (rules or _has_w(tables)):
            out.append(_kendall(model, tables, thresholds.significant_w))
        if thresholds.usable_answers and "answer_checks" in tables:
            out.append(_usable_answers(model, tables))
    if thresholds.untested == "fail":
        out = [replace(o, status="failed", details=[*o.details, "untested rules fail (untested: fail)"])
               if o.status == "not evaluated" else o for o in out]
    return out
