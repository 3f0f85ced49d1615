"""Sections for decision probabilities (p(yes), p(option) from log-probabilities) next to the sampled answer.

The probability tables (:mod:`counterbench.analyses.probabilities`) have the columns of the sampled
answer's tables, so their sections are the sampled sections (:mod:`.sections_outcomes`) drawn on the
probability tables and retitled; the primary measure's sections come first, and the titles name the
measure of every section.
"""

from __future__ import annotations

import dataclasses
import math
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
    """Which measure is primary and why, how many answers carry a complete probability, how much mass the
    allowed answers hold, how many were forced, and how much narrower p is."""
    section = Section(
        "decision_measures", f"Decision probabilities ({name})",
        f"With log-probabilities (--logprobs; the embedded model reads them by itself), every yes/no or "
        f"multiple-choice answer is measured twice: the sampled answer (100 when it gives the positive label or "
        f"the option, else 0) and {name}, the model's probability of that answer at the answer's first token — "
        "every spelling of an answer merged (yes, Yes, \" yes\", the first token of a longer answer) — normalised "
        "over the allowed answers: the measure of DiscrimEval (\"Evaluating and Mitigating Discrimination in "
        "Language Model Decisions\"). Both go through the same tables, tests and marks. An answer whose returned "
        "log-probabilities miss an allowed answer has no probability (it is incomplete, never 0). The probability "
        "is primary when at least 90% of the usable answers have a complete one, the allowed answers hold a median "
        "of at least half the model's probability at the answer, and at most half the answers were forced (the "
        "answer token more than 5 nats below the model's preferred token: a constraint wrote it). Then it has the "
        "sampled answer's expected value without the coin flip on top, so its intervals are narrower. Here "
        f"{'the probability is' if primary else 'the sampled answer is'} primary (Why: the reason where the "
        "sampled answer is). Interval ratio: the median, over the comparisons both measures have, of the "
        "probability gap's 95% interval width over the sampled answer's (the ratio of standard errors, and of the "
        "smallest gap either finds with a given power); the sampled answer needs about 1/ratio² as many prompts "
        "for the same precision.",
        group="Overview",
    )
    frame = ctx.nonempty("decision_measures")
    if frame is None:
        return section
    shown = frame.assign(coverage=pd.to_numeric(frame["coverage"]) * 100.0)
    if "forced_share" in shown.columns:
        shown = shown.assign(forced_share=pd.to_numeric(shown["forced_share"]) * 100.0)
    columns = [
        t.text("model", "Model"), t.text("use_case", "Use case", ctx.use_case_label),
        t.text("measure", "Probability"), t.count("n_answers", "Usable answers"),
        t.count("n_with_probabilities", "With log-probabilities"),
    ]
    if "n_complete" in shown.columns:  # analyses written before the reading columns: not there
        columns += [t.count("n_complete", "Complete"), t.num("coverage", "Complete %", 1),
                    t.Col("Median mass", ("median_mass",), lambda r: _probability(r["median_mass"])),
                    t.num("forced_share", "Forced %", 1)]
    else:
        columns.append(t.num("coverage", "Share %", 1))
    columns += [t.text("primary", "Primary measure")]
    if "why" in shown.columns:
        columns.append(t.text("why", "Why"))
    columns += [t.num("se_ratio", "Interval ratio", 3), t.num("prompts_factor", "Prompts factor", 1),
                t.count("n_compared", "Comparisons")]
    section.tables.append(t.table_view(shown, columns, source="decision_measures.csv"))
    return section


def _probability(value: object) -> str:
    """A probability readable at any size (0.75, 0.031, 1.3e-07); ``—`` when missing."""
    number = t.as_float(value)
    if not math.isfinite(number):
        return t.DASH
    return f"{number:.2g}" if number >= 1e-3 or number == 0 else f"{number:.1e}"
