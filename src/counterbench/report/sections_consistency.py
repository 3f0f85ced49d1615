"""Sections about consistency and robustness: Kendall's W, question-variant robustness, profile rank
agreement, merit sensitivity, language moderation, the fairness-instruction ablation, parse health."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import pandas as pd
from markupsafe import Markup

from counterbench.report import tables as t
from counterbench.report.charts import BarRow, BarValue, Cell, bar_domain, hbar_panel, heatmap_panel, stacked_panel
from counterbench.report.context import ReportContext, language_name, use_case_name
from counterbench.report.document import Figure, Section, attach_table
from counterbench.report.sections_gaps import PAIR_LABEL, by_language, mark_col, model_pivots, use_case_views


def grid_panels(
    ctx: ReportContext,
    frame: pd.DataFrame,
    *,
    columns: str,
    column_order: Sequence[str],
    value: str,
    cell_text: Callable[[t.Row], str],
    tip: Callable[[t.Row], str],
    scale: str,
    vmax: float,
    rename_column: Callable[[str], str] = str,
    cell_width: float = 66,
) -> list[Markup]:
    """One heatmap per language: models × ``columns``."""
    panels = []
    for lang, part in by_language(frame, ctx):
        present = set(part[columns])
        cols = [c for c in column_order if c in present]
        lookup = {(str(r["model"]), r[columns]): r for r in part.to_dict("records")}
        models = ctx.model_order(part)
        cells = [[Cell(t.as_float(r[value]), cell_text(r), tip(r)) if (r := lookup.get((m, c))) is not None
                  else Cell(math.nan) for c in cols] for m in models]
        panels.append(heatmap_panel(language_name(lang) or value, models, [rename_column(c) for c in cols], cells,
                                    scale=scale, vmax=vmax, cell_width=cell_width))
    return panels


def w_mark(r: t.Row) -> str:
    """Stars from the corrected q (BH within the model; ``q_value``), never from the paper's q within the
    axis column (with two models that corrects nothing)."""
    q = r.get("q_value")
    if t.is_missing(q):
        return "*" if t.fmt_flag(r.get("significant")) == "✓" else ""
    return t.stars(q)


def kendalls_w_section(ctx: ReportContext) -> Section:
    section = Section(
        "kendalls-w",
        "Consistency of the ordering (Kendall's W)",
        "Whether the model puts the identities of an axis in the same order for every profile: W = 0 means no "
        "consistent order (the differences look like noise), W = 1 means the same identity always gets the most "
        "and the same one the least. Stars mark axes where the order is significant after Benjamini–Hochberg "
        "correction over all of that model's rows of the table (the family; q: * < 0.05, ** < 0.01, "
        "*** < 0.001). The paper's q (within an axis column, across models) is listed for comparison.",
        group="Consistency",
    )
    frame = attach_table(section, ctx, "kendalls_w_axis", "kendalls_w")
    if frame is not None:
        section.figures.append(Figure(grid_panels(
            ctx, frame, columns="axis", column_order=ctx.axes, value="mean_w",
            cell_text=lambda r: t.fmt_num(r["mean_w"], 2) + w_mark(r),
            tip=lambda r: f"{r['model']} · {r['axis']}: mean W {t.fmt_num(r['mean_w'], 3)}, Fisher p "
                          f"{t.fmt_p(r.get('p_fisher'))}, q {t.fmt_p(r.get('q_value'))}",
            scale="sequential", vmax=1.0), caption="Mean W over use cases (0–1)."))
        wide, columns, extra = with_model_rows(frame, ctx.nonempty("kendalls_w_model"), ctx.axes, "All axes",
                                               {"q_bh": "q_bh_within_axis"})
        model_pivots(section, ctx, wide, columns="axis", column_order=columns,
                     cell=lambda r: t.fmt_num(r["mean_w"], 3) + w_mark(r),
                     extra=[("Mean W", _mean_of("mean_w"))] if extra else [],
                     caption="mean Kendall's W by axis", source="kendalls_w_axis.csv")
        section.tables.append(t.table_view(frame, [
            t.text("model", "Model"), t.text("language", "Language", language_name), t.text("axis", "Axis"),
            t.num("mean_w", "Mean W", 3), t.pvalue("p_fisher", "p (Fisher)"),
            t.pvalue("q_value", "q (BH, within model)"), t.pvalue("q_bh_within_axis", "q (paper: within axis)"),
            t.pvalue("q_bh_all", "q (BH, all cells)"), t.flag("significant", "Significant"),
        ], caption="Per axis, with p and q values", source="kendalls_w_axis.csv", collapse_over=0))
    cells = ctx.nonempty("kendalls_w")
    if cells is not None:
        section.tables.append(t.table_view(cells, [
            t.text("model", "Model"), t.text("language", "Language", language_name),
            t.text("use_case", "Use case", use_case_name), t.text("axis", "Axis"), t.num("w", "W", 3),
            t.num("chi2", "χ²", 2), t.pvalue("p_value", "p"), t.count("n_blocks", "Profiles"),
            t.count("k", "Identifiers"), t.flag("fully_tied", "Fully tied", "yes", ""),
        ], caption="Every cell (model × language × use case × axis)", source="kendalls_w.csv", collapse_over=0))
    return section


def with_model_rows(
    frame: pd.DataFrame, model_rows: pd.DataFrame | None, axes: list[str], label: str, rename: dict[str, str]
) -> tuple[pd.DataFrame, list[str], bool]:
    """Add the analysis's per-model summary rows as an extra ``axis`` column called ``label``.

    Returns the frame, the column order, and whether the caller must compute its own summary
    column instead (no per-model table).
    """
    if model_rows is None:
        return frame, axes, True
    extra = model_rows.rename(columns=rename).assign(axis=label)
    return pd.concat([frame, extra[[c for c in extra.columns if c in frame.columns]]], ignore_index=True), [
        *axes, label], False


def _mean_of(column: str) -> Callable[[Sequence[t.Row]], str]:
    def mean(records: Sequence[t.Row]) -> str:
        values = [v for r in records if math.isfinite(v := t.as_float(r[column]))]
        return t.fmt_num(sum(values) / len(values), 3) if values else t.DASH

    return mean


def _rho_with_mark(r: t.Row) -> str:
    """Mean min ρ, with ✓ where the axis's ranking holds up."""
    return t.fmt_num(r["mean_min_rho"], 2) + (" ✓" if t.fmt_flag(r.get("robust")) == "✓" else "")


def qv_section(ctx: ReportContext) -> Section:
    section = Section(
        "qv-robustness",
        "Robustness to rewording the question",
        "Whether the identities keep their order when the same question is worded differently: the lowest "
        "Spearman correlation between the question variants' identity rankings, averaged over use cases. "
        "✓ marks an axis whose ranking holds up (ρ ≥ 0.85).",
        group="Consistency",
    )
    frame = attach_table(section, ctx, "qv_robustness")
    if frame is None:
        return section
    section.figures.append(Figure(grid_panels(
        ctx, frame, columns="axis", column_order=ctx.axes, value="mean_min_rho",
        cell_text=_rho_with_mark,
        tip=lambda r: f"{r['model']} · {r['axis']}: mean min ρ {t.fmt_num(r['mean_min_rho'], 3)} "
                      f"(95% CI {t.fmt_ci(r.get('ci_low'), r.get('ci_high'))})",
        scale="diverging", vmax=1.0), caption="Red: rankings agree; blue: they reverse."))
    wide, columns, _ = with_model_rows(frame, ctx.nonempty("qv_robustness_model"), ctx.axes, "All settings", {})
    model_pivots(section, ctx, wide, columns="axis", column_order=columns, cell=_rho_with_mark,
                 caption="mean minimum ρ across question variants", source="qv_robustness.csv")
    section.tables.append(t.table_view(frame, [
        t.text("model", "Model"), t.text("language", "Language", language_name), t.text("axis", "Axis"),
        t.num("mean_min_rho", "Mean min ρ", 3), t.ci(), t.flag("robust", "Robust (≥ 0.85)"),
        t.count("n_use_cases", "Use cases"),
    ], caption="All rows with intervals", collapse_over=0, source="qv_robustness.csv"))
    return section


def profile_agreement_section(ctx: ReportContext) -> Section:
    section = Section(
        "profile-agreement",
        "Profile rank agreement",
        "Whether every identity gets the same ordering of candidate profiles (stronger candidates get more): the "
        "mean Spearman correlation between identities' rankings of the profiles. Near 1: merit is ranked the "
        "same way whoever is asking.",
        group="Consistency",
    )
    frame = attach_table(section, ctx, "profile_rank_agreement")
    if frame is None:
        return section
    section.figures.append(Figure(grid_panels(
        ctx, frame, columns="use_case", column_order=ctx.use_cases, value="mean_rho",
        cell_text=lambda r: t.fmt_num(r["mean_rho"], 2),
        tip=lambda r: f"{r['model']} · {use_case_name(r['use_case'])}: mean ρ {t.fmt_num(r['mean_rho'], 3)}",
        scale="diverging", vmax=1.0, rename_column=use_case_name, cell_width=96)))
    section.tables.append(t.table_view(frame, [
        t.text("model", "Model"), t.text("use_case", "Use case", use_case_name),
        t.text("language", "Language", language_name), t.num("mean_rho", "Mean ρ", 3),
    ], source="profile_rank_agreement.csv"))
    return section


def merit_section(ctx: ReportContext) -> Section:
    section = Section(
        "merit",
        "Merit sensitivity",
        "How much the answers move when the candidate changes (a different profile: institution, grades, "
        "experience, rating) for the same identity and question. It is the yardstick for the identity gaps: "
        "identity gaps near this size mean identity matters about as much as merit.",
        group="Consistency",
    )
    frame = attach_table(section, ctx, "merit_sensitivity")
    if frame is not None:
        use_case_views(section, ctx, frame, "Mean Δ% between profiles", "Mean Δ% between profiles (95% CI)",
                       "merit_sensitivity.csv")
    return section


def language_section(ctx: ReportContext) -> Section:
    languages = ctx.study_languages()
    first = languages[0] if languages else ""
    others = languages[1:]
    names = {lang: ctx.language_label(lang) for lang in languages}
    other = names[others[0]] if len(others) == 1 else "another language"
    first_name = names.get(first, "")
    title = (f"{names[first]} vs {' / '.join(names[o] for o in others)}" if others
             else f"Languages ({names[first]} only)" if first else "Languages")
    section = Section(
        "language",
        title,
        f"Whether the prompt's language changes the picture. ρ compares the identity rankings in {first_name} "
        f"and {other} (1 = same order); ΔMean Δ% is {other} minus {first_name} (positive: larger gaps in "
        f"{other}). The 95% CI resamples matched slots of the two languages together; * marks shifts that stay "
        "significant after Benjamini–Hochberg correction over the model's axes."
        if others else "The study declares one language, so there is no language comparison.",
        group="Consistency",
    )
    frame = attach_table(section, ctx, "language_moderation")
    if frame is None:
        return section
    compared = "language" in frame.columns and len(others) > 1
    rows = [(o, frame[frame["language"].astype(str) == o] if compared else frame) for o in others[: None if compared
                                                                                                     else 1]]
    models = ctx.model_order(frame)
    for lang, part in rows:
        if part.empty:
            continue
        axes = ctx.axes_of(part)
        lookup = {(str(r["model"]), r["axis"]): r for r in part.to_dict("records")}
        pair = f"{names[lang]} − {names[first]}"
        rho = [[Cell(t.as_float(r["rho"]), t.fmt_num(r["rho"], 2), f"{m} · {a}: ρ {t.fmt_num(r['rho'], 3)}")
                if (r := lookup.get((m, a))) is not None else Cell(math.nan) for a in axes] for m in models]
        delta_max = float(pd.to_numeric(part["delta_mean_delta"], errors="coerce").abs().max() or 1.0)
        delta = [[Cell(t.as_float(r["delta_mean_delta"]), t.fmt_num(r["delta_mean_delta"], 1, signed=True),
                       f"{m} · {a}: {pair} {t.fmt_num(r['delta_mean_delta'], 2, signed=True)} "
                       f"(95% CI {t.fmt_ci(r.get('ci_low'), r.get('ci_high'))})")
                  if (r := lookup.get((m, a))) is not None else Cell(math.nan) for a in axes] for m in models]
        section.figures.append(Figure([
            heatmap_panel(f"ρ ({names[first]} vs {names[lang]} rankings)", models, axes, rho, scale="diverging",
                          vmax=1.0),
            heatmap_panel(f"ΔMean Δ% ({pair})", models, axes, delta, scale="diverging", vmax=delta_max),
        ]))
    section.tables.append(t.table_view(frame, [
        t.text("model", "Model"), t.text("axis", "Axis"),
        *([t.text("language", "Compared", ctx.language_label)] if compared else []),
        t.num("rho", "ρ", 3), t.pvalue("p_value", "p (ρ)"),
        *(t.num(f"{lang}_mean_delta", f"{names[lang]} Mean Δ%") for lang in languages
          if f"{lang}_mean_delta" in frame.columns),
        t.num("delta_mean_delta", "ΔMean Δ%", 2, signed=True), t.ci(), t.ci("pair_ci_low", "pair_ci_high", PAIR_LABEL),
        mark_col(),
    ], source="language_moderation.csv"))
    return section


def fairness_section(ctx: ReportContext) -> Section:
    section = Section(
        "fairness",
        "Fairness instruction",
        "Whether adding the study's fairness instruction to the system prompt shrinks the gaps (on the use cases "
        "run with it). A negative Δ means the instruction helped. The 95% CI resamples matched slots "
        "of the two prompts together; * marks changes that stay significant after Benjamini–Hochberg correction "
        "over the model's languages.",
        group="Consistency",
    )
    frame = attach_table(section, ctx, "fairness_ablation")
    if frame is None:
        return section
    panels_rows = []
    for lang, part in by_language(frame, ctx):
        rows = [BarRow(str(r["model"]), [
            BarValue("standard", t.as_float(r["standard_mean_delta"]), "#8a94a6"),
            BarValue("with the instruction", t.as_float(r["fairness_mean_delta"]), "#2a9d6f"),
        ]) for r in part.to_dict("records")]
        rows.sort(key=lambda row: ctx.models.index(row.label) if row.label in ctx.models else 999)
        panels_rows.append((language_name(lang), rows))
    domain = bar_domain([r for _, rows in panels_rows for r in rows])
    section.figures.append(Figure([hbar_panel(name, rows, domain=domain, width=440, x_label="Mean Δ%")
                                   for name, rows in panels_rows],
                                  [("standard", "#8a94a6"), ("with the instruction", "#2a9d6f")]))
    section.tables.append(t.table_view(frame, [
        t.text("model", "Model"), t.text("language", "Language", language_name),
        t.num("standard_mean_delta", "Standard Mean Δ%"), t.num("fairness_mean_delta", "With instruction"),
        t.num("delta", "Δ", 2, signed=True), t.ci(), t.ci("pair_ci_low", "pair_ci_high", PAIR_LABEL),
        t.num("relative_change", "Relative change %", 1, signed=True), mark_col(),
    ], source="fairness_ablation.csv"))
    return section


PARSE_COLORS = {"value": "#2a9d6f", "refused": "#e07b00", "unparseable": "#c94f7c", "unfinished": "#7b6cc4",
                "error": "#4a4a4a"}
#: answers that did not finish, as the parse_health table counts them, and how the report names them
UNFINISHED_NAMES = (("n_truncated", "cut off at the token limit (truncated)"),
                    ("n_filtered", "withheld by a content filter (filtered)"), ("n_empty", "empty"))


def parse_section(ctx: ReportContext) -> Section:
    section = Section(
        "parse-health",
        "Parse health and refusals",
        f"How many answers contained {ctx.answer_words()}. Refused and unparseable answers, and answers that "
        "did not finish (cut off at the token limit, withheld by a content filter, or empty), are left out of "
        "every comparison (never guessed or imputed), so a low share means the other results rest on fewer answers. "
        "Used: the answers every table and chart of the report uses (out-of-range values left out unless the "
        "analysis profile keeps them).",
        group="Data",
    )
    frame = attach_table(section, ctx, "parse_health")
    if frame is None:
        return section
    rows = [(model, [(k, v, PARSE_COLORS[k]) for k, v in shares.items()])
            for model, part in ctx.by_model(frame) if (shares := outcome_shares(part))]
    if rows:
        section.figures.append(Figure([stacked_panel("Answers by outcome (all use cases and languages)", rows,
                                                     width=760)], list(PARSE_COLORS.items())))
    section.tables.append(t.table_view(frame, [
        t.text("model", "Model"), t.text("variant", "Prompt"), t.text("use_case", "Use case", use_case_name),
        t.text("language", "Language", language_name), t.count("n", "Responses"), t.share("ok_share", "Value"),
        t.share("refused_share", "Refused"), t.share("unparseable_share", "Unparseable"),
        *([t.share("unfinished_share", "Unfinished")] if "unfinished_share" in frame.columns else []),
        t.count("errors", "Errors"), t.share("out_of_range_share", "Out of range"),
        *([t.count("n_values", "Used")] if "n_values" in frame.columns else []),
    ], source="parse_health.csv"))
    unfinished = unfinished_note(frame)
    if unfinished:
        section.notes.append(unfinished)
    return section


def outcome_shares(rows: pd.DataFrame) -> dict[str, float]:
    """The share of a model's answers with each outcome (value, refused, ...), over its parse-health rows
    weighted by their answer counts; empty when the rows count no answer."""
    n = pd.to_numeric(rows["n"], errors="coerce").fillna(0)
    total = float(n.sum())
    if total <= 0:
        return {}
    shares = {k: float((pd.to_numeric(rows[c], errors="coerce").fillna(0) * n).sum() / total)
              for k, c in (("value", "ok_share"), ("refused", "refused_share"), ("unparseable", "unparseable_share"),
                           ("unfinished", "unfinished_share"), ("error", "error_share")) if c in rows.columns}
    if "error" not in shares:
        shares["error"] = max(0.0, 1.0 - sum(shares.values()))
    return shares


def unfinished_note(frame: pd.DataFrame) -> str | None:
    """One line counting the answers that did not finish, by kind, and how to send them again."""
    counts = [(int(pd.to_numeric(frame[col], errors="coerce").fillna(0).sum()), name)
              for col, name in UNFINISHED_NAMES if col in frame.columns]
    if not any(n for n, _ in counts):
        return None
    listed = ", ".join(f"{n:,} {name}" for n, name in counts if n)
    return (f"Answers that did not finish: {listed}. They enter no result; `counterbench run ... --retry-errors` "
            "sends them again (add `--retry-max-tokens N` to give the truncated ones more room).")
