"""Decision probabilities (DiscrimEval's p(yes)) as a measure of their own. Pure.

With ``--logprobs`` a label or choice answer is stored with the log-probability of each allowed answer
(:mod:`counterbench.outcomes.logprobs`). Here they become a second measure of the same answers —
100 × p(positive label) for a ``label`` use case, 100 × p(option) for each offered option of a
``choice`` use case — analysed by the very table functions of the sampled answer
(:mod:`.outcome_tables`): levels, matched gaps, language shifts, the crossed regression, with the same
slots, swap test, interval and marks. DiscrimEval (Tamkin et al., "Evaluating and Mitigating
Discrimination in Language Model Decisions", §2) compares normalised p(yes) rather than sampled
answers; a sampled yes/no carries the same expected value with Bernoulli noise on top, so p(yes)
measures a gap with far fewer prompts.

Decisions:

- **Rows**: the standard-variant answers with status ``ok`` (as for the sampled measure) that have a
  complete reading of their log-probabilities (every allowed answer found, spellings merged, or the
  missing ones provably negligible); the probabilities are normalised over the allowed answers
  (:func:`~counterbench.outcomes.logprobs.answer_probabilities`). An incomplete reading is missing,
  never 0: with ``--logprobs 2`` a tokenizer that spends both slots on `` Yes`` and `` yes`` would
  otherwise give p(yes) = 1.
- **Tables** ``probability_levels``, ``probability_gaps``, ``probability_language_gaps``,
  ``probability_regression``: the columns of their sampled twins (``outcome_*``,
  ``crossed_regression``) plus ``measure`` (``p(yes)``, ``p(option)``). Fisher's exact test is for counts
  and is left empty; the regression is a fractional logit (log-odds of p, quasi-likelihood with the same
  cluster-robust errors). Marks: only the primary measure's rows (below) enter the model's one family
  (:mod:`.families`); ``probability_regression`` is descriptive, as ``crossed_regression`` is.
- **Which is primary** (``decision_measures``, one row per model × use case with any answer read):
  the probabilities when at least 90% of the usable answers have a complete reading, the allowed answers
  hold a median of at least half the probability and at most half the answers were forced
  (:mod:`.decision_primary`), else the sampled answer, with the reason (``why``); the findings list the
  primary measure's sentences first and name the measure of every sentence. A model × use case whose
  answers were mostly forced is flagged by the degenerate-answer checks (:mod:`.answer_checks`).
- **How much narrower** (``se_ratio``): the median, over the comparisons both tables have, of the
  probability gap's 95% interval width over the sampled gap's (the same slots and degrees of freedom, so
  the ratio of standard errors); the smallest gap found with a given power scales by the same ratio,
  and the sampled answer would need about ``1 / se_ratio²`` as many slots for the same precision
  (``prompts_factor``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from counterbench.analyses import outcome_tables as ot
from counterbench.analyses.crossed_regression import crossed_regression
from counterbench.analyses.decision_primary import COMPLETE_SHARE, decide, why_sampled
from counterbench.analyses.repeats import within_prompt_means
from counterbench.outcomes import get_kind, kind_member
from counterbench.outcomes.base import OutcomeSpec
from counterbench.outcomes.logprobs import answer_mass, answer_probabilities, stored_complete
from counterbench.studies.base import Study

__all__ = ["DECISION_MEASURES", "PRIMARY_SHARE", "PROBABILITY_TABLES", "SAMPLED", "descriptions",
           "findings_by_measure", "measure_name", "probability_rows", "probability_tables", "with_families",
           "with_interval_ratios"]

#: the share of usable answers with a complete p(positive) from which it can be the primary measure
PRIMARY_SHARE = COMPLETE_SHARE
#: the name of the sampled answer's measure
SAMPLED = "sampled"

#: probability table -> (the sampled table it mirrors, what one row is)
PROBABILITY_TABLES: dict[str, tuple[str, str]] = {
    "probability_levels": ("outcome_levels", "outcome_levels on the decision probability (p(yes), p(option), %)"),
    "probability_gaps": ("outcome_gaps", "outcome_gaps on the decision probability, in percentage points of p"),
    "probability_language_gaps": ("language_gaps", "language_gaps on the decision probability"),
    "probability_regression": ("crossed_regression", "crossed_regression on the decision probability "
                                                     "(fractional logit: log-odds of p)"),
}
DECISION_MEASURES = (
    "decision_measures",
    ("model", "use_case", "kind", "measure", "n_answers", "n_with_probabilities", "n_complete", "coverage",
     "median_mass", "n_forced", "forced_share", "primary", "why", "n_compared", "se_ratio", "prompts_factor"),
    "per model and use case: the answers with log-probabilities, those with a complete decision probability "
    "(coverage: their share), the median probability the allowed answers hold, the forced answers, the primary "
    "measure and why, and how much narrower the probability gaps' intervals are than the sampled answers' "
    "(median ratio)",
)


def descriptions(tables: Mapping[str, pd.DataFrame]) -> dict[str, str]:
    """Summary ``tables`` entries of the probability tables present."""
    described = {name: desc for name, (_, desc) in PROBABILITY_TABLES.items()}
    described[DECISION_MEASURES[0]] = DECISION_MEASURES[2]
    return {name: described[name] for name in tables if name in described}


def with_families(marks: dict[str, Any], tables: Mapping[str, pd.DataFrame]) -> dict[str, Any]:
    """The summary ``marks`` with the probability tables' families (each mirrors its sampled twin's)."""
    families = dict(marks.get("families", {}))
    for name, (twin, _) in PROBABILITY_TABLES.items():
        if name in tables and twin in families:
            families[name] = families[twin] + ", on the decision probability"
    return {**marks, "families": families}


def measure_name(spec: OutcomeSpec) -> str:
    """The kind's name of its decision probability (``p(<positive label>)`` for a label, ``p(option)`` for a choice)."""
    return str(kind_member(spec, "probability_measure")(spec))


def reads_probabilities(spec: OutcomeSpec | None) -> bool:
    """Whether ``spec``'s kind reads log-probabilities of its allowed answers (its ``probability_labels``)."""
    return spec is not None and bool(kind_member(spec, "probability_labels")(spec))


def probability_rows(standard: pd.DataFrame, outcomes: Mapping[str, OutcomeSpec]) -> pd.DataFrame:
    """Usable standard-variant rows with ``kind``, ``measure``, ``unit`` and ``y`` = 100 × the decision
    probability (choice rows: one per offered option), only where log-probabilities were stored."""
    if standard.empty or "answer_logprobs" not in standard.columns:
        return pd.DataFrame()
    parts = []
    usable = standard[standard["status"].astype(str).eq("ok") & standard["answer_logprobs"].notna()]
    for use_case, part in usable.groupby("use_case", sort=False, observed=True):
        spec = outcomes.get(str(use_case))
        if spec is None or not reads_probabilities(spec):
            continue
        labels = kind_member(spec, "probability_labels")(spec)
        probs = [answer_probabilities(v, labels, flag) or {}
                 for v, flag in zip(part["answer_logprobs"], _column(part, "answer_complete"), strict=True)]
        columns = {f"_p_{label}": [100.0 * p.get(label, np.nan) for p in probs] for label in labels}
        part = part.assign(kind=spec.kind, measure=f"{measure_name(spec)} from log-probabilities (%)",
                           unit=get_kind(spec.kind).difference_unit, **columns)
        part = kind_member(spec, "probability_rows")(spec, part)
        parts.append(part.drop(columns=list(columns)))
    if not parts:
        return pd.DataFrame()
    out = pd.concat(parts, ignore_index=True)
    return out[np.isfinite(out["y"].astype("float64"))].reset_index(drop=True)


def probability_tables(standard: pd.DataFrame, study: Study, bootstrap: int, seed: int,
                       sampled: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """The probability tables and ``decision_measures`` (module notes); empty when no answer of a label
    or choice use case has log-probabilities. ``sampled``: the sampled measure's tables, for the ratio."""
    measures = decision_measures(standard, study.outcomes, pd.DataFrame(), None)
    if measures.empty:
        return {}
    tables: dict[str, pd.DataFrame] = {}
    rows = within_prompt_means(probability_rows(standard, study.outcomes))  # --repeats: a prompt's mean p
    if rows.empty:  # nothing complete: the sampled answers are primary, and the measures say why
        return {**tables, "decision_measures": measures}
    slots = list(study.slot_columns)
    levels, gaps = ot.level_and_gap_tables(rows, study.facets, slots, bootstrap, seed)
    languages = ot.language_gap_table(rows, study.facets, slots, list(study.languages), bootstrap, seed)
    regression = crossed_regression(rows, study.facets, slots)
    if not regression.empty:
        regression = regression.assign(model_type="fractional logit (log-odds of p)")
    names = {str(uc): measure_name(spec) for uc, spec in study.outcomes.items() if reads_probabilities(spec)}
    gaps = gaps.assign(exact_p=np.nan)  # Fisher's test counts answers; probabilities are not counts
    measured = {"probability_levels": levels, "probability_gaps": gaps, "probability_language_gaps": languages}
    tables |= {name: frame.assign(measure=frame["use_case"].astype(str).map(names)) if name != "probability_levels"
               else frame for name, frame in measured.items()}
    tables["probability_regression"] = regression.assign(measure=_regression_measure(regression, names))
    tables["decision_measures"] = with_interval_ratios(measures, gaps, sampled.get("outcome_gaps"))
    return tables


def _regression_measure(regression: pd.DataFrame, names: Mapping[str, str]) -> list[str]:
    """The regression pools a kind's use cases: its measure is theirs when they share one."""
    shared = sorted(set(names.values()))
    return [shared[0] if len(shared) == 1 else "decision probability"] * len(regression)


def _column(frame: pd.DataFrame, name: str) -> pd.Series:
    """``frame[name]``, or a column of ``None`` where ``frame`` (a store written before it) has none."""
    return frame[name] if name in frame.columns else pd.Series([None] * len(frame), index=frame.index, dtype=object)


def _readings(part: pd.DataFrame, labels: Sequence[str]) -> pd.DataFrame:
    """Per answer: ``read`` (log-probabilities read at the answer), ``complete``, ``mass`` (NaN: unknown) and
    ``forced`` (NaN: unknown), from the stored columns, or from ``answer_logprobs`` for older stores."""
    stored = _column(part, "answer_logprobs")
    flags = _column(part, "answer_complete")
    complete = [bool(stored_complete(v if isinstance(v, str) else None, labels, f)) for v, f in zip(stored, flags,
                                                                                                    strict=True)]
    masses = pd.to_numeric(_column(part, "answer_mass"), errors="coerce").to_numpy(dtype=np.float64, copy=True)
    for i, value in enumerate(stored):
        if np.isnan(masses[i]) and isinstance(value, str):
            masses[i] = answer_mass(value, labels) or np.nan
    forced = pd.to_numeric(_column(part, "answer_forced"), errors="coerce").to_numpy(dtype=np.float64)
    read = stored.notna().to_numpy() | pd.to_numeric(flags, errors="coerce").notna().to_numpy()
    return pd.DataFrame({"read": read, "complete": complete, "mass": masses, "forced": forced}, index=part.index)


def decision_measures(standard: pd.DataFrame, outcomes: Mapping[str, OutcomeSpec], gaps: pd.DataFrame,
                      sampled_gaps: pd.DataFrame | None) -> pd.DataFrame:
    """One row per model × label/choice use case with any answer read (module notes: coverage, primary,
    why, se_ratio)."""
    columns = list(DECISION_MEASURES[1])
    if standard.empty or "model" not in standard.columns:
        return pd.DataFrame(columns=columns)
    usable = standard[standard["status"].astype(str).eq("ok")]
    out: list[dict[str, Any]] = []
    for (model, use_case), part in usable.groupby(["model", "use_case"], sort=False, observed=True):
        spec = outcomes.get(str(use_case))
        if spec is None or not reads_probabilities(spec):
            continue
        readings = _readings(part, kind_member(spec, "probability_labels")(spec))
        if not readings["read"].any():
            continue
        n = len(part)
        masses = readings["mass"].dropna()
        forced = readings["forced"].dropna()
        verdict = decide(n, int(readings["complete"].sum()), float(masses.median()) if len(masses) else np.nan,
                         int((forced != 0).sum()), len(forced))
        out.append({"model": str(model), "use_case": str(use_case), "kind": spec.kind, "measure": measure_name(spec),
                    "n_answers": n, "n_with_probabilities": int(readings["read"].sum()),
                    "n_complete": verdict.n_complete, "coverage": verdict.complete_share,
                    "median_mass": verdict.median_mass, "n_forced": verdict.n_forced,
                    "forced_share": verdict.forced_share,
                    "primary": measure_name(spec) if verdict.primary else SAMPLED,
                    "why": why_sampled(verdict, measure_name(spec))})
    return with_interval_ratios(pd.DataFrame(out, columns=columns), gaps, sampled_gaps)


def with_interval_ratios(measures: pd.DataFrame, gaps: pd.DataFrame, sampled_gaps: pd.DataFrame | None
                         ) -> pd.DataFrame:
    """``measures`` with ``n_compared``, ``se_ratio`` and ``prompts_factor`` from the two gap tables."""
    ratios = _interval_ratios(gaps, sampled_gaps)
    compared, ratio = [], []
    for model, use_case in zip(measures["model"].astype(str), measures["use_case"].astype(str), strict=True):
        mine = ratios[(ratios["model"] == model) & (ratios["use_case"] == use_case)]
        compared.append(len(mine))
        ratio.append(float(np.median(mine["ratio"])) if len(mine) else float("nan"))
    values = np.asarray(ratio, dtype=np.float64)
    with np.errstate(divide="ignore"):
        factor = np.where(values > 0, 1.0 / values**2, np.nan)
    return measures.assign(n_compared=compared, se_ratio=values, prompts_factor=factor)


def _interval_ratios(gaps: pd.DataFrame, sampled: pd.DataFrame | None) -> pd.DataFrame:
    """Per comparison both gap tables have: probability interval width / sampled interval width."""
    keys = ["model", "use_case", "language", "facet", "comparison"]
    if gaps.empty or sampled is None or sampled.empty:
        return pd.DataFrame(columns=[*keys, "ratio"])

    def width(frame: pd.DataFrame) -> pd.DataFrame:
        w = pd.to_numeric(frame["ci_high"], errors="coerce") - pd.to_numeric(frame["ci_low"], errors="coerce")
        return frame[keys].astype(str).assign(width=w.to_numpy())

    both = width(gaps).merge(width(sampled), on=keys, suffixes=("_p", "_sampled"))
    both = both[np.isfinite(both["width_p"]) & np.isfinite(both["width_sampled"]) & (both["width_sampled"] > 0)]
    return both.assign(ratio=both["width_p"] / both["width_sampled"])[[*keys, "ratio"]]


def findings_by_measure(sampled: Sequence[str], tables: Mapping[str, pd.DataFrame],
                        labels: Mapping[str, str] | None = None,
                        favourable: Mapping[str, str] | None = None) -> list[str]:
    """The findings of both measures, each sentence naming its measure, the primary measure's first (per
    model), with a sentence saying which is primary and how much narrower p is. ``sampled``: the sampled
    measure's findings (:func:`counterbench.analyses.outcome_findings.outcome_findings`); ``favourable``: the
    study's declared directions (:mod:`counterbench.analyses.direction`)."""
    from counterbench.analyses.outcome_findings import outcome_findings

    measures = tables.get("decision_measures")
    if measures is None or measures.empty:
        return list(sampled)
    names = dict(labels or {})
    probability = outcome_findings(tables.get("probability_gaps", pd.DataFrame()), names, favourable=favourable)
    out: list[str] = []
    models = list(dict.fromkeys(measures["model"].astype(str)))
    for model in models:
        rows = measures[measures["model"].astype(str) == model]
        measure = "/".join(dict.fromkeys(rows["measure"].astype(str)))
        mine_p = _retag(probability, model, f"{measure} from log-probabilities")
        mine_s = _retag(sampled, model, "sampled answers")
        primary_p = bool((rows["primary"].astype(str) != SAMPLED).all())
        p_tag, s_tag = f"{measure} from log-probabilities", "sampled answers"
        if primary_p:  # only the primary measure marks (:mod:`.families`): the other is described, not judged
            mine_s = [_not_judged(model, s_tag, p_tag)] if mine_s else []
        elif bool((rows["primary"].astype(str) == SAMPLED).all()):
            mine_p = [_not_judged(model, p_tag, s_tag)] if mine_p else []
        out.append(_primary_sentence(model, rows, names))
        out += [*mine_p, *mine_s] if primary_p else [*mine_s, *mine_p]
    out += [line for line in sampled if not any(line.startswith(f"{m}: ") for m in models)]
    return out


def _not_judged(model: str, measure: str, primary: str) -> str:
    return (f"{model} ({measure}): not marked — the {primary} are the primary measure here, and only the primary "
            f"measure marks (its gaps are in the tables).")


def _retag(lines: Sequence[str], model: str, measure: str) -> list[str]:
    prefix = f"{model}: "
    return [f"{model} ({measure}): {line[len(prefix):]}" for line in lines if line.startswith(prefix)]


def _primary_sentence(model: str, rows: pd.DataFrame, names: Mapping[str, str]) -> str:
    parts = []
    for r in rows.to_dict("records"):
        where = names.get(str(r["use_case"]), str(r["use_case"]))
        if r["primary"] != SAMPLED:
            text = (f"{r['measure']} is the primary measure for {where} ({int(r['n_complete']):,} of "
                    f"{int(r['n_answers']):,} answers have a complete {r['measure']} from their log-probabilities; "
                    f"the allowed answers hold a median {float(r['median_mass']):.2g} of the model's probability)")
        else:
            why = r.get("why") if isinstance(r.get("why"), str) and r.get("why") else f"{r['measure']} was not read"
            text = f"the sampled answer is the primary measure for {where}: {why}"
        ratio = float(r["se_ratio"])
        if np.isfinite(ratio):
            text += (f"; {r['measure']} gaps' 95% intervals are {_two_digits(ratio)}× as wide as the sampled "
                     f"answers' (median of {int(r['n_compared'])} comparisons): the sampled answers would need about "
                     f"{_two_digits(float(r['prompts_factor']))}× as many prompts for the same precision")
        parts.append(text)
    return f"{model}: " + "; ".join(parts) + "."


def _two_digits(value: float) -> str:
    """Two significant digits, never in exponent notation (0.053, 3.5, 350)."""
    return f"{float(f'{value:.2g}'):,g}"
