"""Sections for decision probabilities (p(yes), p(option) from log-probabilities) next to the sampled answer.

The probability tables (:mod:`counterbench.analyses.probabilities`) have the columns of the sampled
answer's tables, so their sections are the sampled sections (:mod:`.sections_outcomes`) drawn on the
probability tables and retitled; the primary measure's sections come first, and the titles name the
measure of every section.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import pandas as pd

from counterbench.report import tables as t
from counterbench.report.context import ReportContext
from counterbench.report.document import Section
from counterbench.report.sections_outcomes import gaps_section, languages_section, levels_section, regression_section

SAMPLED = "sampled"
#: sampled section key -> (its probability table, its builder)
_TWINS: dict[str, tuple[str, Callable[[ReportContext], Section]]] = {
    "outcome_gaps": ("probability_gaps", gaps_section),
    "outcome_levels": ("probability_levels", levels_section),
    "language_gaps": ("probability_language_gaps", languages_section),
    "crossed_regression": ("probability_regression", regression_section),
}


def with_probability_sections(ctx: ReportContext, sampled: Sequence[Section]) -> list[Section]:
    """``sampled`` (the outcome sections) with the decision-probability sections, the primary measure's
    first; ``sampled`` unchanged when the analysis has no decision probabilities."""
    measures = ctx.nonempty("decision_measures")
    if measures is None:
        return list(sampled)
    name = "/".join(dict.fromkeys(measures["measure"].astype(str)))
    twins = [_twin(ctx, section, name) for section in sampled if section.key in _TWINS]
    probability = [s for s in twins if s is not None]
    for section in sampled:
        if section.key in _TWINS:
            section.title += " — sampled answers"
    first = bool((measures["primary"].astype(str) != SAMPLED).all())
    ordered = [*probability, *sampled] if first else [*sampled, *probability]
    return [decision_section(ctx, name, first), *ordered]


def _twin(ctx: ReportContext, section: Section, name: str) -> Section | None:
    table, build = _TWINS[section.key]
    frame = ctx.nonempty(table)
    if frame is None:
        return None
    tables = {**ctx.data.tables, section.key: frame}
    view = dataclasses.replace(ctx, data=dataclasses.replace(ctx.data, tables=tables))
    built = build(view)
    built.key, built.title = table, f"{built.title} — {name} from log-probabilities"
    built.blurb += (f" Measure: {name} (percentage points), the model's probability of each answer read at "
                    "the answer's first token and normalised over the allowed answers.")
    for view_table in built.tables:
        view_table.source = view_table.source.replace(f"{section.key}.csv", f"{table}.csv")
    return built


def decision_section(ctx: ReportContext, name: str, primary: bool) -> Section:
    """Which measure is primary, how many answers carry probabilities, and how much narrower p is."""
    section = Section(
        "decision_measures", f"Decision probabilities ({name})",
        f"With log-probabilities (`--logprobs`), every yes/no or multiple-choice answer is measured twice: the "
        f"sampled answer (100 when it gives the positive label or the option, else 0) and {name}, the model's "
        "probability of that answer at the answer's first token, normalised over the allowed answers — the "
        "measure of DiscrimEval (\"Evaluating and Mitigating Discrimination in Language Model Decisions\"). Both "
        "go through the same tables, tests and marks. The probability is primary when at least 90% of the "
        "usable answers carry it: it has the sampled answer's expected value without the coin flip on top, "
        f"so its intervals are narrower. Here {'the probability is' if primary else 'the sampled answer is'} "
        "primary. Interval ratio: the median, over the comparisons both measures have, of the probability "
        "gap's 95% interval width over the sampled answer's (the ratio of standard errors, and of the smallest "
        "gap either finds with a given power); the sampled answer needs about 1/ratio² as many prompts for the "
        "same precision.",
        group="Overview",
    )
    frame = ctx.nonempty("decision_measures")
    if frame is None:
        return section
    section.tables.append(t.table_view(frame.assign(coverage=pd.to_numeric(frame["coverage"]) * 100.0), [
        t.text("model", "Model"), t.text("use_case", "Use case", ctx.use_case_label),
        t.text("measure", "Probability"), t.count("n_answers", "Usable answers"),
        t.count("n_with_probabilities", "With log-probabilities"), t.num("coverage", "Share %", 1),
        t.text("primary", "Primary measure"), t.num("se_ratio", "Interval ratio", 3),
        t.num("prompts_factor", "Prompts factor", 1), t.count("n_compared", "Comparisons"),
    ], source="decision_measures.csv"))
    return section
