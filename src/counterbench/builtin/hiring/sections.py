"""The hiring study's report sections (one per analysis table family; see ``docs/hiring.md``).

Every value shown comes from the ``hiring_*`` tables; model answers never reach these sections except
as counts (raw responses appear only in the escaped samples section).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from counterbench.builtin.hiring.sections_common import model_heads, open_section, variant_label, with_variant
from counterbench.report import tables as t
from counterbench.report.charts import BarRow, BarValue, Cell, bar_domain, hbar_panel, heatmap_panel
from counterbench.report.context import ReportContext
from counterbench.report.document import Figure, Section, series_color, show_table

#: the mark of a group's win rate or score difference, and the words for its family
MARK = t.mark("Mark (BH within model)", n="n_clusters", unit="occupations")
WR_FAMILY = ("Marks: an exact swap test over occupations — the independent unit: the jobs of one occupation are "
             "near-duplicates that a model answers alike — (under \"the markers change nothing\" every comparison "
             "of an occupation's jobs "
             "changes sides with the neutral resume together), Benjamini–Hochberg within each model over its groups × "
             "prompt variants; with fewer than 6 occupations no p ≤ 0.05 is possible and a group is not tested. The "
             "interval is shown uncorrected.")
SCORE_FAMILY = ("Marks on the score differences from the neutral resume: each job's group mean minus that job's "
                "neutral resume's score, an exact swap (sign-flip) test over occupations of each occupation's mean "
                "paired difference together with the interval's t-test (the larger p), Benjamini–Hochberg within "
                "each model over its groups × prompt variants; fewer than 6 occupations: not tested. The interval "
                "(t with C − 1 degrees of freedom for C occupations on the occupation-bootstrap standard error) is "
                "shown uncorrected. \"− mean over groups\" (Score_g minus the mean of the groups' scores, the "
                "neutral resume left out) is descriptive and never marked: when one group is preferred, every "
                "other group falls below that mean.")


def _label(model: str, rationale: object, many_models: bool) -> str:
    return f"{model} · {variant_label(rationale)}" if many_models else variant_label(rationale)


def _forest(ctx: ReportContext, frame: pd.DataFrame, value: str, low: str, high: str, title: str, x_label: str,
            fmt: str) -> Figure | None:
    rows = []
    variants = list(dict.fromkeys(frame["rationale"]))
    for group, part in frame.groupby("group", sort=False):
        bars = []
        for r in part.to_dict("records"):
            model = str(r["model"])
            index = ctx.models.index(model) if model in ctx.models else 0
            color = series_color(index * max(len(variants), 1) + variants.index(r["rationale"]))
            bars.append(BarValue(_label(model, r["rationale"], True), t.as_float(r[value]), color,
                                 t.as_float(r[low]), t.as_float(r[high]),
                                 "*" if t.fmt_flag(r.get("significant")) == "✓" else ""))
        rows.append(BarRow(str(group), bars))
    if not rows or len(rows) > 40:
        return None
    legend = []
    for model in dict.fromkeys(frame["model"].astype(str)):
        index = ctx.models.index(model) if model in ctx.models else 0
        for v in variants:
            legend.append((_label(model, v, True), series_color(index * max(len(variants), 1) + variants.index(v))))
    return Figure([hbar_panel(title, rows, domain=bar_domain(rows), width=680, x_label=x_label, value_format=fmt,
                              name_bars=frame["model"].astype(str).nunique() > 1)],
                  legend=legend, caption="Whiskers: 95% occupation-bootstrap intervals. * marked (Benjamini–Hochberg "
                                         "within the model; see the note under the table).")


#: fewer jobs than this and the report says its intervals are wide (the calibration used 20 jobs)
FEW_JOBS = 20


def _few_jobs(s: Section, frame: pd.DataFrame) -> None:
    """Note that intervals over few jobs (the quick preset has 3) are wide and say little."""
    column = "n_clusters" if "n_clusters" in frame.columns else "n_jobs"
    units = pd.to_numeric(frame[column], errors="coerce").max() if column in frame.columns else None
    if units is not None and units == units and units < FEW_JOBS:
        what = "occupation(s)" if column == "n_clusters" else "job(s)"
        s.notes.append(f"Only {int(units)} {what}: every interval resamples occupations (the jobs of one "
                       "occupation are near-duplicates, not independent), so at this size the intervals are wide and "
                       "few differences can be told from noise (the paper preset has 20 occupations × 5 jobs).")


def overview_section(ctx: ReportContext) -> Section:
    s, frame = open_section(ctx, "hiring_bias_summary")
    show_table(s, ctx, "hiring_bias_summary", [
        t.text("model", "Model"), t.text("setting", "Setting"), t.text("variant", "Prompt"),
        t.num("mean", "Group average (win rate, or TSR in %)", 3),
        t.num("disparity", "Disparity", 3), t.ci("disparity_low", "disparity_high", "95% CI", digits=3),
        t.num("disparity_null", "Null median", 3), t.num("disparity_null_high", "Null 95th pct.", 3),
        t.pvalue("disparity_p", "p vs null"),
        t.num("deviation", "Deviation", 3), t.ci("deviation_low", "deviation_high", "95% CI", digits=3),
        t.num("deviation_null", "Null median", 3), t.num("deviation_null_high", "Null 95th pct.", 3),
        t.pvalue("deviation_p", "p vs null"),
    ], prepare=with_variant)
    if frame is not None:
        s.notes.append("The p against the null is the share of null draws at least as large as the observed value; "
                       "it is a reference for reading the number, not a mark, and is not corrected for multiplicity.")
    return s


def win_rate_section(ctx: ReportContext) -> Section:
    s, frame = open_section(ctx, "hiring_win_rates")
    if frame is None:
        return s
    fig = _forest(ctx, frame, "diff", "diff_low", "diff_high", "Win rate − 0.5", "win rate − 0.5", "{:+.3f}")
    if fig:
        s.figures.append(fig)
    show_table(s, ctx, "hiring_win_rates", [
        t.text("model", "Model"), t.text("variant", "Prompt"), t.text("group", "Group"),
        t.count("n_comparisons", "Comparisons"), t.count("n_jobs", "Jobs"), t.count("n_clusters", "Occupations"),
        t.num("win_rate", "Win rate", 3),
        t.ci(digits=3), t.pvalue("q_value", "q"), MARK,
    ], prepare=with_variant)
    s.notes.append(WR_FAMILY)
    _few_jobs(s, frame)
    return s


def top_score_section(ctx: ReportContext) -> Section:
    s, frame = open_section(ctx, "hiring_top_score_rates")
    if frame is not None:
        rows = [BarRow(str(g), [BarValue(_label(str(r["model"]), r["rationale"], True), t.as_float(r["tsr"]),
                                         series_color(i)) for i, r in enumerate(part.to_dict("records"))])
                for g, part in frame.groupby("group", sort=False)]
        if rows and len(rows) <= 40:
            s.figures.append(Figure([hbar_panel("Top-Score Rate (%)", rows, domain=(0.0, 100.0), width=680,
                                                value_format="{:.0f}",
                                                name_bars=frame["model"].astype(str).nunique() > 1)]))
        show_table(s, ctx, "hiring_top_score_rates", [
            t.text("model", "Model"), t.text("variant", "Prompt"), t.text("group", "Group"),
            t.count("n_jobs", "Jobs"), t.count("top_jobs", "Jobs at the top"), t.num("tsr", "TSR (%)", 1),
            t.ci("tsr_low", "tsr_high", "95% CI (%)", digits=1), t.num("tsr_null", "Null mean (%)", 1),
            t.num("tsr_null_high", "Null 95th pct. (%)", 1),
        ], prepare=with_variant)
        s.notes.append("Null: the Top-Score Rate a group gets when each job's scores are shuffled among its resumes "
                       "(the markers mean nothing; ties kept) — with many resumes per job a fair evaluator's TSR is "
                       "far below 100 %.")
        _few_jobs(s, frame)
    scores = ctx.nonempty("hiring_scores")
    if scores is not None:
        marked = scores[~scores["group"].eq("neutral")]
        fig = _forest(ctx, marked, "diff", "diff_low", "diff_high", "Mean score − neutral resume", "points",
                      "{:+.2f}")
        if fig:
            s.figures.append(fig)
        show_table(s, ctx, "hiring_scores", [
            t.text("model", "Model"), t.text("variant", "Prompt"), t.text("group", "Group"), t.count("n", "Scores"),
            t.num("mean_score", "Mean score", 2), t.num("diff", "− neutral resume", 2, signed=True),
            t.ci("diff_low", "diff_high", digits=2), t.pvalue("q_value", "q"), MARK,
            t.num("diff_mean", "− mean over groups (descriptive)", 2, signed=True),
            t.ci("diff_mean_low", "diff_mean_high", "95% CI (descriptive)", digits=2),
        ], prepare=with_variant)
        s.notes.append(SCORE_FAMILY)
    return s


def advantage_section(ctx: ReportContext) -> Section:
    s, frame = open_section(ctx, "hiring_relative_advantage")
    if frame is None:
        return s
    groups = list(dict.fromkeys(frame["group"]))
    keys = list(dict.fromkeys(zip(frame["model"], frame["setting"], frame["rationale"], strict=True)))
    lookup = {(r["model"], r["setting"], r["rationale"], r["group"]): r["relative_advantage"]
              for r in frame.to_dict("records")}
    cells = [[Cell(t.as_float(lookup.get((*k, g))), t.fmt_num(lookup.get((*k, g)), 1, signed=True)) for g in groups]
             for k in keys]
    # the model heads its rows (shorter row labels than "model · setting · prompt")
    labels = [f"{st} · {variant_label(r)}" for _, st, r in keys]
    heads = model_heads(keys)
    if keys and len(keys) <= 60:
        s.figures.append(Figure([heatmap_panel("Relative advantage (%)", labels, groups, cells, scale="diverging",
                                               cell_width=74, row_groups=heads)]))
    return s


def rationale_section(ctx: ReportContext) -> Section:
    s, _ = open_section(ctx, "hiring_rationale")
    show_table(s, ctx, "hiring_rationale_tests", [
        t.text("setting", "Setting"), t.text("metric", "Metric"), t.count("n_models", "Models"),
        t.count("improved", "Improved"), t.count("worsened", "Worsened"), t.pvalue("p_value", "Sign test p"),
        t.num("mean_delta", "Mean change", 4, signed=True), t.ci("delta_low", "delta_high", digits=4),
    ])
    show_table(s, ctx, "hiring_rationale_deltas", [
        t.text("model", "Model"), t.text("setting", "Setting"), t.text("metric", "Metric"),
        t.num("without", "Without", 3), t.num("with", "With", 3), t.num("delta", "Change", 3, signed=True),
    ])
    return s


def recoverability_section(ctx: ReportContext) -> Section:
    s, frame = open_section(ctx, "hiring_recoverability")
    curve = ctx.nonempty("hiring_ablation")
    if curve is not None:
        panels = []  # one panel per model, its rows the attributes
        for model, by_model in curve.groupby("model", sort=False):
            rows = []
            for attribute, part in by_model.groupby("attribute", sort=False):
                bars = [BarValue(str(r["condition"]), t.as_float(r["macro_f1"]), series_color(i))
                        for i, r in enumerate(part.sort_values("step").to_dict("records"))]
                rows.append(BarRow(str(attribute), bars))
            panels.append(hbar_panel(f"{model}: macro-F1 as markers are removed", rows, domain=(0.0, 1.0),
                                     width=680, value_format="{:.2f}"))
        if panels and len(panels) <= 10:
            s.figures.append(Figure(panels,
                                    legend=[(str(c), series_color(i)) for i, c in
                                            enumerate(curve.sort_values("step")["condition"].drop_duplicates())]))
    if frame is not None:
        show_table(s, ctx, "hiring_recoverability", [
            t.text("model", "Model"), t.text("attribute", "Attribute"), t.text("condition", "Markers"),
            t.count("n", "Resumes"), t.num("macro_f1", "Macro-F1", 3), t.share("accuracy", "Accuracy"),
            t.share("cannot_share", "Cannot determine"), t.share("unparsed_share", "Unparsed"),
        ])
        if curve is None and "hiring_ablation" in ctx.unsupported:
            s.notes.append(f"No ablation curve: it {ctx.unsupported['hiring_ablation']}.")
    return s


def controls_section(ctx: ReportContext) -> Section:
    s, _ = open_section(ctx, "hiring_controls")
    show_table(s, ctx, "hiring_position_effect", [
        t.text("model", "Model"), t.text("variant", "Prompt"), t.count("n", "Answers"),
        t.num("first_share", "First-position share", 3), t.ci(digits=3), t.share("tie_share", "Ties"),
        t.share("consistency", "Consistent in both orders"),
    ], caption="Position effect", prepare=with_variant)
    for name, caption, cols in _control_tables():
        if show_table(s, ctx, name, cols, caption=caption, prepare=with_variant) is None and name in ctx.unsupported:
            s.notes.append(f"{caption}: {ctx.unsupported[name]}.")
    return s


def _control_tables() -> Sequence[tuple[str, str, list[t.Col]]]:
    return (
        ("hiring_job_fit", "Job fit", [t.text("model", "Model"), t.text("variant", "Prompt"),
                                       t.text("gender_dominance", "Jobs"), t.text("ethnicity", "Ethnicity"),
                                       t.num("win_rate", "Win rate", 3), t.num("range", "Range", 3)]),
        ("hiring_length_control", "Resume length", [t.text("setting", "Setting"), t.text("model", "Model"),
                                                    t.text("variant", "Prompt"),
                                                    t.num("slope_per_100_chars", "Slope per 100 characters", 4),
                                                    t.pvalue("p_value", "p"), t.num("r", "r", 3), t.count("n", "n")]),
        ("hiring_language_only", "Language only", [t.text("model", "Model"), t.text("variant", "Prompt"),
                                                   t.text("group", "Ethnicity"), t.num("win_rate", "Win rate", 3),
                                                   t.ci(digits=3), t.pvalue("q_value", "q"), MARK]),
    )


def health_section(ctx: ReportContext) -> Section:
    s, _ = open_section(ctx, "hiring_parse_health")
    show_table(s, ctx, "hiring_parse_health", [
        t.text("model", "Model"), t.text("use_case", "Use case"), t.text("status", "Status"),
        t.text("reason", "Reason"), t.count("n", "Answers"), t.count("with_rationale", "With a rationale"),
        t.num("rationale_median_chars", "Median rationale (characters)", 0),
    ])
    return s


def hiring_sections(ctx: ReportContext) -> list[Section]:
    """The hiring study's sections, in report order."""
    from counterbench.builtin.hiring.sections_ordering import ordering_section
    from counterbench.builtin.hiring.sections_paper import paper_sections
    from counterbench.builtin.hiring.sections_recovery import recovery_classes_section

    return [overview_section(ctx), win_rate_section(ctx), top_score_section(ctx), advantage_section(ctx),
            ordering_section(ctx), rationale_section(ctx), recoverability_section(ctx),
            recovery_classes_section(ctx), controls_section(ctx), *paper_sections(ctx), health_section(ctx)]
