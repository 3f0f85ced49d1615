"""Sections about the size of the gaps: leaderboard, axes, use cases, canonical pairs, maximum gaps,
identifier deviation, and how many pairs each axis contributes."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import pandas as pd
from markupsafe import Markup

from counterbench.report import tables as t
from counterbench.report.charts import BarRow, BarValue, Cell, bar_domain, hbar_panel, heatmap_panel, radar_panel
from counterbench.report.context import ReportContext, language_name, use_case_name
from counterbench.report.document import (
    Figure,
    Section,
    attach_table,
    lang_color,
    language_legend,
    unsupported_note,
)
from counterbench.report.links import link_rows
from counterbench.report.svg import nice_ceiling
from counterbench.stats.inference import MIN_SLOTS, too_few_text

PAIR_LABEL = "95% CI, pairs (paper's method)"


def _untested(r: t.Row) -> bool:
    value = r.get("testable")
    return not t.is_missing(value) and t.fmt_flag(value) != "✓"


def mark_col(label: str = "Mark (BH within model)") -> t.Col:
    """``*`` for a corrected mark, the too-little-data words for an untested row, else empty."""
    def fmt(r: t.Row) -> str:
        if _untested(r):
            return too_few_text(t.as_float(r.get("n_slots")))
        return "*" if t.fmt_flag(r.get("significant")) == "✓" else ""

    return t.Col(label, ("significant",), fmt, numeric=False)


def mean_ci_cell(r: t.Row, value: str = "mean_delta", digits: int = 1) -> str:
    main = t.fmt_num(r[value], digits)
    lo, hi = t.as_float(r.get("ci_low")), t.as_float(r.get("ci_high"))
    if main == t.DASH or not (math.isfinite(lo) and math.isfinite(hi)):
        return main
    return f"{main} ({lo:.{digits}f}–{hi:.{digits}f})"


def unweighted_mean(column: str, digits: int = 1) -> Callable[[Sequence[t.Row]], str]:
    def mean(records: Sequence[t.Row]) -> str:
        values = [t.as_float(r[column]) for r in records]
        values = [v for v in values if math.isfinite(v)]
        return t.fmt_num(sum(values) / len(values), digits) if values else t.DASH

    return mean


def by_language(frame: pd.DataFrame, ctx: ReportContext) -> list[tuple[str, pd.DataFrame]]:
    if "language" not in frame.columns:
        return [("", frame)]
    return [(lang, part) for lang in ctx.languages if not (part := frame[frame["language"] == lang]).empty]


def model_pivots(section: Section, ctx: ReportContext, frame: pd.DataFrame, *, columns: str,
                 column_order: Sequence[str], cell: Callable[[t.Row], str], caption: str, source: str,
                 extra: Sequence[tuple[str, Callable[[Sequence[t.Row]], str]]] = (),
                 rename_column: Callable[[str], str] | None = None) -> None:
    """One models × ``columns`` table per language of ``frame``, captioned "<language>: ``caption``"."""
    for lang, part in by_language(frame, ctx):
        section.tables.append(t.pivot_view(
            part, index="model", columns=columns, index_order=ctx.model_order(part), column_order=column_order,
            cell=cell, index_label="Model", extra=extra, rename_column=rename_column,
            caption=f"{language_name(lang)}: {caption}", source=source))


def leaderboard_section(ctx: ReportContext) -> Section:
    section = Section(
        "leaderboard",
        "Leaderboard",
        "Mean Δ% is how far apart, on average, two answers are when only the identity in the prompt changes, "
        "as a percentage of their mean: 0 means every identity gets the same advice, higher means bigger "
        "gaps. V@10 is the percentage of such pairs that differ by more than 10%. Lower is fairer.",
        group="Overview",
    )
    board = ctx.nonempty("leaderboard")
    section.unsupported = unsupported_note(ctx, "leaderboard")
    if board is None:
        return section
    flags = board["flag"].fillna("").astype(str) if "flag" in board.columns else pd.Series("", index=board.index)
    board = board.assign(_flagged=flags.ne(""), flag=flags)
    board = board.sort_values(["_flagged", "overall_mean_delta"], kind="stable", na_position="last")
    board = board.reset_index(drop=True)
    ranked = int((~board["_flagged"]).sum())
    board = board.assign(rank=[str(i + 1) if i < ranked else "not ranked" for i in range(len(board))],
                         kind=[ctx.kind_label(str(m)) for m in board["model"]])
    intervals = "rank_low" in board.columns and bool(board["rank_low"].notna().any())
    rows = [
        BarRow(str(r["model"]), [BarValue("Overall", t.as_float(r["overall_mean_delta"]), "#3b4a6b",
                                          t.as_float(r.get("ci_low")), t.as_float(r.get("ci_high")))])
        for r in board.to_dict("records") if not r["_flagged"]
    ]
    which = "slots resampled (the prompts that differ only in the identity)"
    taus = pd.to_numeric(board["tau"], errors="coerce").dropna() if "tau" in board.columns else pd.Series([])
    tau = f"{float(taus.iloc[0]):g}" if len(taus) else "10"
    languages = [lang for lang in ctx.study_languages()  # the study's languages that have pairs
                 if f"{lang}_mean_delta" in board.columns and board[f"{lang}_mean_delta"].notna().any()]
    pooled = "languages pooled" if len(languages) > 1 else language_name(languages[0]) if languages else ""
    section.figures.append(Figure([hbar_panel(f"Overall Mean Δ% ({pooled})" if pooled else "Overall Mean Δ%",
                                              rows, width=620,
                                              x_label="Mean Δ% (lower is fairer)")],
                                  caption=f"Whiskers: 95% CI, {which}."))
    section.tables.append(t.table_view(board, [
        t.text("rank", "#"), *([t.rank_range()] if intervals else []), t.text("model", "Model"), t.text("kind", "Kind"),
        t.num("overall_mean_delta", "Overall Mean Δ%"), t.ci("ci_low", "ci_high", "95% CI"),
        t.ci("pair_ci_low", "pair_ci_high", PAIR_LABEL),
        *(t.num(f"{lang}_mean_delta", ctx.language_label(lang)) for lang in languages),
        *(t.num(f"{lang}_v10", f"{ctx.language_label(lang)} V@{tau} %", 1) for lang in languages),
        t.num("axis_mean", "Mean of axes"), t.count("n_pairs", "Pairs"),
        *([t.text("flag", "Not ranked because")] if ranked < len(board) else []),
    ], source="leaderboard.csv", collapse_over=None, muted=lambda r: bool(r["_flagged"])))
    if ranked < len(board):
        section.notes.append("Greyed models gave degenerate answers (constant, not varying with the profile, or "
                             "mostly outside the plausibility range): their gaps of 0 say nothing about fairness, so "
                             "they are not ranked (answer_checks.csv).")
    section.notes += [t.RANK_NOTE] if intervals else []  # the joint rank intervals of model_ranks
    section.notes.append(pairs_weight_note(ctx))
    return section


def axes_examples(ctx: ReportContext) -> str:
    """The study's first axes, for a blurb: ``Religion, Region, Gender, ...``."""
    shown = ", ".join(ctx.axes[:3])
    return shown + (", ..." if len(ctx.axes) > 3 else "") if shown else "each axis the study varies"


def pair_example(ctx: ReportContext) -> str:
    """One of the study's canonical pairs, for a blurb: ``e.g. Hindu vs Muslim``."""
    pairs = ctx.data.summary.get("canonical_pairs")
    if isinstance(pairs, dict):
        for pair in pairs.values():
            if isinstance(pair, list | tuple) and len(pair) == 2:
                return f"e.g. {pair[0]} vs {pair[1]}"
    return "the pairs the study names"


def pairs_weight_note(ctx: ReportContext) -> str:
    pairs = ctx.nonempty("pairs_per_axis")
    base = ("'Mean of axes' weighs the axes equally; the overall figures weigh every pair equally, so axes with "
            "many identities dominate them")
    if pairs is None or "n_pairs" not in pairs.columns:
        return base + "."
    totals = pairs.groupby("axis")["n_pairs"].sum()
    top = totals.sort_values(ascending=False)
    if top.sum() <= 0 or len(top) < 3:
        return base + "."
    share = (top.iloc[0] + top.iloc[1]) / top.sum() * 100
    return base + f" ({top.index[0]} and {top.index[1]} make up {share:.0f}% of all pairs)."


def axis_section(ctx: ReportContext) -> Section:
    section = Section(
        "axes",
        "Gaps by identity axis",
        f"Mean Δ% within each identity axis ({axes_examples(ctx)}). A larger polygon means larger gaps; "
        "a spike points to the axis on which the model's answers depend most on who is asking.",
    )
    frame = attach_table(section, ctx, "axis_mean_delta")
    if frame is None:
        return section
    values = pd.to_numeric(frame["mean_delta"], errors="coerce")
    top = float(values.max()) if values.notna().any() else 1.0
    rmax = nice_ceiling(top)
    panels = []
    for model, part in ctx.by_model(frame):
        series = []
        for lang in ctx.languages:
            sub = part[part["language"] == lang].set_index("axis")["mean_delta"] if "language" in part else None
            if sub is None or sub.empty:
                continue
            series.append((language_name(lang), lang_color(lang),
                           [t.as_float(sub.get(axis, math.nan)) for axis in ctx.axes]))
        panels.append(radar_panel(model, ctx.axes, series, rmax=rmax))
    section.figures.append(Figure(panels, language_legend(ctx.languages), caption="Mean Δ% per axis; one chart "
                                  "per model, same scale for all."))
    model_pivots(section, ctx, frame, columns="axis", column_order=ctx.axes, cell=mean_ci_cell,
                 extra=[("Mean", unweighted_mean("mean_delta"))], source="axis_mean_delta.csv",
                 caption="Mean Δ% (95% CI) by axis; Mean = unweighted mean of the axes")
    section.tables.append(t.table_view(frame, [
        t.text("model", "Model"), t.text("language", "Language", language_name), t.text("axis", "Axis"),
        t.num("mean_delta", "Mean Δ%"), t.ci(), t.ci("pair_ci_low", "pair_ci_high", PAIR_LABEL),
        t.num("v10", "V@10 %", 1), t.count("n_pairs", "Pairs"), t.share("share_of_pairs", "Share of pairs"),
    ], caption="All axis rows with both intervals", source="axis_mean_delta.csv", collapse_over=0))
    return section


def use_case_section(ctx: ReportContext) -> Section:
    section = Section(
        "use-cases",
        "Gaps by use case",
        "Mean Δ% for each task. A model can be even-handed on one task and not on another, so compare the "
        "panels.",
    )
    frame = attach_table(section, ctx, "use_case_mean_delta")
    if frame is not None:
        use_case_views(section, ctx, frame, "Mean Δ%", "Mean Δ% (95% CI) by use case", "use_case_mean_delta.csv")
    return section


def language_bar_rows(ctx: ReportContext, frame: pd.DataFrame, value: str) -> list[BarRow]:
    """One bar row per model: ``value`` in each language, with its 95% CI."""
    rows = []
    for model, sub in ctx.by_model(frame):
        bars = [BarValue(language_name(lang), t.as_float(r[value]), lang_color(lang),
                         t.as_float(r.get("ci_low")), t.as_float(r.get("ci_high")))
                for lang in ctx.languages for r in sub[sub["language"] == lang].to_dict("records")]
        rows.append(BarRow(model, bars))
    return rows


def use_case_views(section: Section, ctx: ReportContext, frame: pd.DataFrame, x_label: str, caption: str,
                   source: str) -> None:
    """A table of mean Δ% per model, language and use case (with ``ci_low``/``ci_high``) shown as bars per
    use case, then as one model × use case table per language (``caption`` after the language's name)."""
    panels_rows = [(use_case_name(uc), language_bar_rows(ctx, part, "mean_delta")) for uc in ctx.use_cases
                   if not (part := frame[frame["use_case"] == uc]).empty]
    domain = bar_domain([r for _, rows in panels_rows for r in rows])
    section.figures.append(Figure(
        [hbar_panel(name, rows, domain=domain, width=440, x_label=x_label) for name, rows in panels_rows],
        language_legend(ctx.languages), caption="Whiskers: 95% CI."))
    model_pivots(section, ctx, frame, columns="use_case", column_order=ctx.use_cases, cell=mean_ci_cell,
                 rename_column=use_case_name, caption=caption, source=source)


def grouped_heatmaps(
    ctx: ReportContext,
    frame: pd.DataFrame,
    *,
    value: str,
    text: Callable[[t.Row], str],
    tip: Callable[[t.Row], str],
    scale: str,
    cell_width: float = 60,
) -> list[Markup]:
    """One heatmap per language: rows = model (heading) × use case, columns = axes."""
    axes = ctx.axes_of(frame)
    vmax = float(pd.to_numeric(frame[value], errors="coerce").abs().max() or 1.0)
    has_uc = "use_case" in frame.columns
    panels = []
    for lang, part in by_language(frame, ctx):
        lookup = {(str(r["model"]), r["use_case"] if has_uc else "", r["axis"]): r for r in part.to_dict("records")}
        labels: list[str] = []
        groups: list[str] = []
        cells: list[list[Cell]] = []
        for m in ctx.model_order(part):
            ucs = [uc for uc in (ctx.use_cases if has_uc else [""]) if any((m, uc, a) in lookup for a in axes)]
            for k, uc in enumerate(ucs):
                labels.append(use_case_name(uc) if uc else m)
                groups.append(m if k == 0 and has_uc else "")
                cells.append([Cell(t.as_float(r[value]), text(r), tip(r)) if (r := lookup.get((m, uc, a))) is not None
                              else Cell(math.nan) for a in axes])
        panels.append(heatmap_panel(language_name(lang) or value, labels, axes, cells, scale=scale, vmax=vmax,
                                    cell_width=cell_width, row_groups=groups))
    return panels


def _where(r: t.Row) -> str:
    uc = f" · {use_case_name(str(r['use_case']))}" if "use_case" in r and not t.is_missing(r["use_case"]) else ""
    return f"{r['model']}{uc} · {r['axis']}"


def cpg_section(ctx: ReportContext) -> Section:
    section = Section(
        "cpg",
        "Canonical pair gaps",
        f"The gap between the two identities of a familiar pair ({pair_example(ctx)}) on exactly the same prompts, in "
        "% of the pair's mean: (first − second) / their mean (the matched gaps table states comparison vs reference: "
        "the other sign). Red: the first identity is offered more; blue: the second is. * marks gaps that stay "
        "significant after Benjamini–Hochberg correction over all of that model's rows of the table (the family; a "
        "gap must pass both an exact test — the two identities' answers swapped prompt by prompt — and the test of "
        "its interval) and whose 95% interval excludes 0; a gap resting on fewer than " + str(MIN_SLOTS)
        + " matched prompts is not tested. Sign consistency is how often (across matched prompts) the first got more.",
    )
    overall = ctx.nonempty("cpg_overall")
    if overall is not None:
        overall = overall.assign(pair=[f"{a} vs {b}" for a, b in zip(overall["reference"], overall["comparison"],
                                                                      strict=True)])
        section.tables.append(t.table_view(overall, [
            t.text("model", "Model"), t.text("language", "Language", language_name), t.text("axis", "Axis"),
            t.text("pair", "Pair"), t.num("gap", "Gap %", 2, signed=True), t.ci(),
            t.count("n_agree", "Matched prompts agreeing"), t.count("n_slots", "Matched prompts"),
            t.count("n_use_cases", "Use cases"), mark_col(),
        ], caption="Averaged over use cases (the figure the findings at the top use); marks: BH within each model",
            source="cpg_overall.csv", collapse_over=None))
    frame = attach_table(section, ctx, "cpg")
    if frame is None:
        return section
    frame = frame.assign(pair=[f"{a} vs {b}" for a, b in zip(frame["reference"], frame["comparison"], strict=True)])

    def text(r: t.Row) -> str:
        return t.fmt_num(r["gap"], 1, signed=True) + ("*" if t.fmt_flag(r.get("significant")) == "✓" else "")

    def tip(r: t.Row) -> str:
        untested = f"; {too_few_text(t.as_float(r.get('n_slots')))}" if _untested(r) else ""
        return (f"{_where(r)}: {r['pair']} {t.fmt_num(r['gap'], 2, signed=True)}% (95% CI "
                f"{t.fmt_ci(r.get('ci_low'), r.get('ci_high'))}; first higher in "
                f"{t.fmt_num(r.get('sign_consistency'), 0)}% of {t.fmt_int(r.get('n_slots'))} slots{untested})")

    pairs = sorted({(a, p) for a, p in zip(frame["axis"], frame["pair"], strict=True)},
                   key=lambda x: ctx.axes.index(x[0]) if x[0] in ctx.axes else 99)
    caption = "Columns: " + "; ".join(f"{a}: {p}" for a, p in pairs) + ". Gap in % of the pair's mean."
    section.figures.append(Figure(grouped_heatmaps(ctx, frame, value="gap", text=text, tip=tip, scale="diverging",
                                                   cell_width=62), caption=caption))
    section.tables.append(t.table_view(frame, [
        t.text("model", "Model"), t.text("language", "Language", language_name),
        t.text("use_case", "Use case", use_case_name), t.text("axis", "Axis"), t.text("pair", "Pair"),
        t.num("gap", "Gap %", 2, signed=True), t.ci(), t.num("sign_consistency", "First higher, % of slots", 1),
        t.count("n_slots", "Slots"), mark_col(),
    ], source="cpg.csv"))
    link_rows(section.tables[-1], frame, ctx, "Gap %")
    return section


def mog_section(ctx: ReportContext) -> Section:
    section = Section(
        "mog",
        "Maximum observed gap",
        "The largest gap between any two identities of an axis (comparing each identity's average answer) in "
        "each use case: the worst case, and which identities sit at the top and at the bottom. Descriptive: the "
        "largest of many noisy gaps is above zero even for a model that treats everyone alike, so it carries no "
        "interval and no mark (simulation in the analysis docs); the canonical pair gaps are the tested comparisons.",
    )
    frame = attach_table(section, ctx, "mog")
    if frame is None:
        return section

    def tip(r: t.Row) -> str:
        return (f"{_where(r)}: {t.fmt_num(r['max_gap'], 1)}% — highest {r.get('top_identifier')}, lowest "
                f"{r.get('bottom_identifier')}")

    section.figures.append(Figure(grouped_heatmaps(ctx, frame, value="max_gap", text=lambda r: t.fmt_num(
        r["max_gap"], 1), tip=tip, scale="sequential"), caption="Maximum gap in % between identity means; hover "
        "a cell for the identities at the two ends."))
    ranked = frame.sort_values("max_gap", ascending=False, na_position="last")
    cols = [
        t.text("model", "Model"), t.text("language", "Language", language_name),
        t.text("use_case", "Use case", use_case_name), t.text("axis", "Axis"), t.num("max_gap", "Max gap %", 1),
        t.text("top_identifier", "Highest"), t.text("bottom_identifier", "Lowest"),
    ]
    section.tables.append(t.table_view(ranked, cols, caption="The ten largest gaps", max_rows=10,
                                       collapse_over=None, source="mog.csv"))
    link_rows(section.tables[-1], ranked, ctx, "Max gap %")
    section.tables.append(t.table_view(ranked, cols, caption="All rows", collapse_over=0, source="mog.csv"))
    return section


def identifier_section(ctx: ReportContext) -> Section:
    section = Section(
        "identifiers",
        "Identifier deviation",
        "How far each identity's average answer sits above (+) or below (−) the average of all identities of "
        "its axis, in percent. Bars show the mean over models; dots show each model.",
    )
    frame = attach_table(section, ctx, "identifier_deviation")
    if frame is None:
        return section
    frame = frame.assign(deviation=pd.to_numeric(frame["deviation"], errors="coerce"))
    many = frame["model"].nunique() > 1
    axis_rows = []
    for axis in ctx.axes:
        part = frame[frame["axis"] == axis]
        if part.empty:
            continue
        means = part.groupby("identifier", sort=False)["deviation"].mean().sort_values(ascending=False)
        rows = []
        for ident, mean in means.items():
            dots = ([(str(r["model"]), float(r["deviation"])) for r in part[part["identifier"] == ident]
                     .to_dict("records")] if many else [])
            color = "#c43434" if mean > 0 else "#2166ac"
            rows.append(BarRow(str(ident), [BarValue("mean over models" if many else "deviation", float(mean),
                                                     color)], dots))
        axis_rows.append((axis, rows))
    domain = bar_domain([r for _, rows in axis_rows for r in rows])
    panels = [hbar_panel(axis, rows, domain=domain, width=440, x_label="Deviation from the axis mean, %",
                         bar_height=10, value_format="{:+.1f}") for axis, rows in axis_rows]
    legend = [("above the axis mean", "#c43434"), ("below", "#2166ac")]
    if many:
        legend.append(("one model (dot)", "#ffffff"))
    section.figures.append(Figure(panels, legend))
    wide = frame.assign(row=[f"{a} · {i}" for a, i in zip(frame["axis"], frame["identifier"], strict=True)])
    order = [f"{a} · {i}" for a, rows in axis_rows for i in (r.label for r in rows)]
    section.tables.append(t.pivot_view(
        wide, index="row", columns="model", index_order=order, column_order=ctx.model_order(frame),
        cell=lambda r: t.fmt_num(r["deviation"], 1, signed=True), index_label="Axis · identifier",
        caption="Deviation % by identifier and model", source="identifier_deviation.csv"))
    section.tables[-1].collapsed = True
    return section
