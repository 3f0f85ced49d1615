"""Sections of the generic outcome tables (every kind; amount studies also have their own sections):
matched gaps, levels, languages, regression.

Wording comes from the study (facet names, language names, the measure each kind describes), never
from a particular study.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from counterbench.report import tables as t
from counterbench.report.charts import BarRow, BarValue, bar_domain, hbar_panel
from counterbench.report.context import ReportContext
from counterbench.report.document import Figure, Section, series_color
from counterbench.report.links import link_rows
from counterbench.report.sections_gaps import mark_col
from counterbench.report.sections_names import NAME as NAMES_TABLE
from counterbench.report.sections_names import names_sample_section
from counterbench.stats.inference import MIN_SLOTS

FACET_WORDS = {"axis": "axis", "group": "group of identifiers", "attribute": "crossed attribute"}
MARK_RULE = (
    "A mark (*) needs Benjamini–Hochberg q ≤ 0.05 within the model's one family — its tested rows of every "
    "table that marks — on "
    "a p that passes both an exact test (the two conditions' answers swapped slot by slot) and the test of "
    "the interval, and a 95% interval that excludes 0; a comparison on fewer than " + str(MIN_SLOTS) +
    " matched prompts is not tested ('too few matched prompts to test').")

GROUP_RULE = (" A group row holds for these names — the names the study lists, compared slot by slot — and a "
              "model that reacts to single names moves it; 'Groups over names like these' treats the names as a "
              "sample of their group.")


def _mark(r: t.Row) -> str:
    """The bar's mark: the table's own (``significant``), never a bare q."""
    return "*" if t.fmt_flag(r.get("significant")) == "✓" else ""


def _lang(ctx: ReportContext) -> Callable[[str], str]:
    return ctx.language_label


def _attach(section: Section, ctx: ReportContext, name: str, fallback: str) -> pd.DataFrame | None:
    """The rows of table ``name`` for ``section`` (``None`` when empty); when there are none, the section says
    why: the analysis's reason, else ``fallback``."""
    frame = ctx.nonempty(name)
    if frame is None:
        section.unsupported = ctx.unsupported.get(name, fallback).rstrip(".").capitalize() + "."
    return frame


def gaps_section(ctx: ReportContext) -> Section:
    section = Section(
        "outcome_gaps", "Matched gaps",
        "Each row compares the answers for one identity with those for the reference identity of the same "
        f"{'/'.join(sorted({FACET_WORDS.get(k, k) for k in ctx.facet_kinds}) or 'axis')}, inside prompts that "
        "differ only in that identity. The difference is in the outcome's own unit (percentage points for "
        "rates and yes/no shares, points for scores; for amounts Δ% of the pair's mean, (comparison − "
        "reference) / their mean — the number the canonical pair gap, the findings and the gate state); 0 "
        "means no gap. '% of the reference' (comparison / reference − 1) is shown for reading only: nothing "
        "is marked or judged on it. " + MARK_RULE + (GROUP_RULE if "group" in ctx.facet_kinds else ""),
        group="Overview",
    )
    frame = _attach(section, ctx, "outcome_gaps", "no comparison has both levels in the same slots")
    if frame is None:
        return section
    panels = []
    for (use_case, unit), part in _by_use_case(frame):
        rows = []
        for r in part.to_dict("records"):
            model = str(r["model"])
            color = series_color(ctx.models.index(model) if model in ctx.models else 0)
            bars = [BarValue(model, t.as_float(r["difference"]), color, t.as_float(r["ci_low"]),
                             t.as_float(r["ci_high"]), _mark(r))]
            label = f"{r['facet']}: {r['comparison']} − {r['reference']}"
            if str(r.get("facet_kind")) == "group":
                label += " (for these names)"
            if len(ctx.languages) > 1:
                label += f" ({ctx.language_label(str(r['language']))})"
            rows.append(BarRow(_with_model(label, model, part), bars))
        if rows and len(rows) <= 80:
            panels.append(hbar_panel(f"{ctx.use_case_label(use_case)}: difference from the reference (95% CI)",
                                     rows, domain=bar_domain(rows), width=640, x_label=_axis_label("difference", unit),
                                     value_format="{:+.2f}"))
    if panels:  # one panel per use case: each has one outcome kind, so one unit on its axis
        section.figures.append(Figure(
            panels, [(m, series_color(i)) for i, m in enumerate(ctx.models)],
            caption="Whiskers: 95% CI, slots resampled, corrected for few slots. One panel per use case, each "
                    "in its outcome's unit."))
    cols = [
        t.text("model", "Model"), t.text("use_case", "Use case", ctx.use_case_label),
        t.text("language", "Language", _lang(ctx)), t.text("facet", "Compared"),
        t.text("comparison", "Identity"), t.text("reference", "Reference"),
        t.num("comparison_mean", "Mean"), t.num("reference_mean", "Reference mean"),
        t.num("difference", "Difference", signed=True), t.ci(), t.text("difference_unit", "Unit"),
        t.num("relative_pct", "% of the reference", 1, signed=True), t.count("n_slots", "Matched prompts"),
        t.pvalue("q_value", "q"), mark_col(),
    ]
    if frame["exact_p"].notna().any():
        cols.append(t.pvalue("exact_p", "Fisher p"))
    section.tables.append(t.table_view(frame, cols, source="outcome_gaps.csv"))
    link_rows(section.tables[-1], viewer_rows(frame), ctx, "Difference")
    return section


def _with_model(label: str, model: str, panel: pd.DataFrame) -> str:
    """A row's label naming its model where the panel has several (colour alone does not tell them apart)."""
    return f"{model} · {label}" if panel["model"].astype(str).nunique() > 1 else label


def _by_use_case(frame: pd.DataFrame) -> list[tuple[tuple[str, str], pd.DataFrame]]:
    """``frame``'s rows per use case and unit (a use case has one outcome kind, so one unit), in order."""
    unit = frame["difference_unit"] if "difference_unit" in frame.columns else pd.Series("", index=frame.index)
    keyed = frame.assign(_unit=unit.fillna("").astype(str), _use_case=frame["use_case"].astype(str))
    return [((str(u), str(d)), part.drop(columns=["_unit", "_use_case"]))
            for (u, d), part in keyed.groupby(["_use_case", "_unit"], sort=False)]


def _axis_label(what: str, unit: str) -> str:
    return f"{what} ({unit})" if unit else what


def viewer_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows whose viewer links open the slots behind each gap: an axis facet's slots restricted to its two
    identifiers; a group's or a crossed attribute's slots of the use case (the store keeps identifiers, not
    group or attribute levels, so those are not narrowed further)."""
    kind = frame["facet_kind"].astype(str) if "facet_kind" in frame.columns else pd.Series("axis", index=frame.index)
    on_axis = kind == "axis"
    out = frame.assign(axis=frame["facet"].where(on_axis, None) if "facet" in frame.columns else None)
    for column in ("reference", "comparison"):
        if column in out.columns:
            out[column] = out[column].where(on_axis, None)
    return out


def levels_section(ctx: ReportContext) -> Section:
    section = Section(
        "outcome_levels", "Outcome by identity",
        "The mean outcome for each identity (and group or attribute level), with a 95% confidence interval "
        "that resamples whole slots.",
    )
    frame = _attach(section, ctx, "outcome_levels", "no usable answers")
    if frame is None:
        return section
    for lang in ctx.languages:
        part = frame[frame["language"].astype(str) == lang]
        if part.empty:
            continue
        section.tables.append(t.table_view(part, [
            t.text("model", "Model"), t.text("use_case", "Use case", ctx.use_case_label), t.text("facet", "Compared"),
            t.text("level", "Identity"), t.text("measure", "Measure"), t.num("mean", "Mean"), t.ci(),
            t.count("n", "Answers"), t.count("n_slots", "Slots"),
        ], caption=ctx.language_label(lang), source="outcome_levels.csv"))
    return section


def languages_section(ctx: ReportContext) -> Section:
    names = " and ".join(ctx.language_label(lang) for lang in ctx.languages) or "the study's languages"
    section = Section(
        "language_gaps", "Languages compared",
        f"Does a gap change with the language of the prompt ({names})? Shift = the gap in the first language "
        "minus the same gap in the other, paired by slot; the swap test exchanges a slot's two languages. "
        + MARK_RULE,
    )
    frame = _attach(section, ctx, "language_gaps", "needs answers in two languages for the same slots")
    if frame is None:
        return section
    def color(model: str) -> str:
        return series_color(ctx.models.index(model) if model in ctx.models else 0)

    panels = []
    units = _units_of(ctx)
    for use_case, part in frame.groupby(frame["use_case"].astype(str), sort=False):
        rows = [BarRow(_with_model(f"{r['facet']}: {r['comparison']} − {r['reference']}"
                                   + (f" ({ctx.language_label(str(r['other_language']))})"
                                      if len(ctx.languages) > 2 else ""), str(r["model"]), part),
                       [BarValue(str(r["model"]), t.as_float(r["shift"]), color(str(r["model"])),
                                 t.as_float(r["ci_low"]), t.as_float(r["ci_high"]), _mark(r))])
                for r in part.to_dict("records")][:60]
        panels.append(hbar_panel(f"{ctx.use_case_label(str(use_case))}: shift of each gap between languages", rows,
                                 width=640, x_label=_axis_label("shift", units.get(str(use_case), "")),
                                 value_format="{:+.2f}"))
    section.figures.append(Figure(panels, [(m, color(m)) for m in ctx.models],
                                  caption="Whiskers: 95% CI, paired by slot. One panel per use case, each in its "
                                          "outcome's unit."))
    section.tables.append(t.table_view(frame, [
        t.text("model", "Model"), t.text("use_case", "Use case", ctx.use_case_label), t.text("facet", "Compared"),
        t.text("comparison", "Identity"), t.text("reference", "Reference"),
        t.text("language", "Language", _lang(ctx)), t.num("difference", "Gap", signed=True),
        t.text("other_language", "Other language", _lang(ctx)), t.num("other_difference", "Gap there", signed=True),
        t.num("shift", "Shift", signed=True), t.ci(), t.count("n_slots", "Matched prompts"),
        t.pvalue("q_value", "q"), mark_col(),
    ], source="language_gaps.csv"))
    link_rows(section.tables[-1], viewer_rows(frame), ctx, "Shift")
    return section


def _units_of(ctx: ReportContext) -> dict[str, str]:
    """Use case -> the unit its gaps are in, read from ``outcome_gaps``."""
    gaps = ctx.nonempty("outcome_gaps")
    if gaps is None or "difference_unit" not in gaps.columns:
        return {}
    pairs = zip(gaps["use_case"], gaps["difference_unit"], strict=True)
    return {str(u): str(d) for u, d in pairs if isinstance(d, str)}


def regression_section(ctx: ReportContext) -> Section:
    section = Section(
        "crossed_regression", "All attributes at once",
        "One model per model and language with every crossed attribute and a fixed effect per scenario: the "
        "effect of each attribute level against its reference, holding the others fixed (log-odds for yes/no "
        "answers, as in DiscrimEval's discrimination score; outcome units otherwise). Standard errors are "
        "clustered by slot with the small-sample (CR1) correction, and intervals and p use t with clusters − 1 "
        "degrees of freedom; p from " + str(MIN_SLOTS) + " clusters. Descriptive: it tests the gap table's "
        "contrasts again (adjusted for the other attributes), so it carries no mark — the marks are the gap "
        "table's, in the model's one family.",
    )
    frame = _attach(section, ctx, "crossed_regression", "only studies with crossed attributes have it")
    if frame is None:
        return section
    if "n_clusters" in frame.columns:  # the too-little-data words count clusters here
        frame = frame.assign(n_slots=frame["n_clusters"])
    section.tables.append(t.table_view(frame, [
        t.text("model", "Model"), t.text("language", "Language", _lang(ctx)), t.text("attribute", "Attribute"),
        t.text("level", "Level"), t.text("reference", "Reference"), t.num("estimate", "Estimate", 3, signed=True),
        t.ci(digits=3), t.text("model_type", "Scale"), t.count("n_clusters", "Clusters"), t.pvalue("p_value", "p"),
    ], source="crossed_regression.csv"))
    return section


def outcome_sections(ctx: ReportContext) -> list[Section]:
    """The sections of the generic outcome tables, those with something to show first."""
    built = [gaps_section(ctx), levels_section(ctx)]
    if len(ctx.languages) > 1 or ctx.nonempty("language_gaps") is not None:
        built.append(languages_section(ctx))
    if ctx.nonempty("crossed_regression") is not None:
        built.append(regression_section(ctx))
    if "group" in ctx.facet_kinds or ctx.nonempty(NAMES_TABLE) is not None:
        built.append(names_sample_section(ctx))
    return built


def has_outcome_tables(tables: dict[str, pd.DataFrame]) -> bool:
    return "outcome_gaps" in tables or "outcome_levels" in tables
