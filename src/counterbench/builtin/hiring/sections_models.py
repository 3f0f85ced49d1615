"""Report section of the across-model summaries (paper Figs. 3, 5, 13 and Table 14)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from markupsafe import Markup

from counterbench.builtin.hiring.sections_common import open_section, variant_label
from counterbench.report import tables as t
from counterbench.report.charts import BarRow, BarValue, finite, hbar_panel
from counterbench.report.context import ReportContext
from counterbench.report.document import Figure, Section, series_color, show_table
from counterbench.report.svg import MUTED, TEXT, Svg, nice_ticks, tick_label

SETTINGS = {"compare": "Direct Comparison", "score": "Score & Shortlist"}


def _prepare(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.assign(variant=frame["rationale"].map(variant_label)) if "rationale" in frame.columns else frame
    return out.assign(setting=out["setting"].map(lambda s: SETTINGS.get(str(s), str(s)))) \
        if "setting" in out.columns else out


def scatter_panel(title: str, points: Sequence[tuple[str, float, float, str]], *, width: float = 420,
                  height: float = 300) -> Markup:
    """Models as points: x = disparity, y = deviation (both 0 at the ideal); each point labelled."""
    svg = Svg(width, height, label=title)
    svg.text(0, 10, title, weight="600", size=12)
    x0, x1, y0, y1 = 46.0, width - 12.0, 28.0, height - 40.0
    xs = [p[1] for p in points if finite(p[1])] or [0.0]
    ys = [p[2] for p in points if finite(p[2])] or [0.0]
    xmax, ymax = max(max(xs) * 1.1, 1e-6), max(max(ys) * 1.1, 1e-6)

    def at(x: float, y: float) -> tuple[float, float]:
        return x0 + x / xmax * (x1 - x0), y1 - y / ymax * (y1 - y0)

    for tick in nice_ticks(0.0, xmax, 4):
        if tick <= xmax:
            svg.line(at(tick, 0)[0], y0, at(tick, 0)[0], y1)
            svg.text(at(tick, 0)[0], y1 + 10, tick_label(tick), anchor="middle", size=10, fill=MUTED)
    for tick in nice_ticks(0.0, ymax, 4):
        if tick <= ymax:
            svg.line(x0, at(0, tick)[1], x1, at(0, tick)[1])
            svg.text(x0 - 4, at(0, tick)[1], tick_label(tick), anchor="end", size=10, fill=MUTED)
    svg.text((x0 + x1) / 2, height - 12, "normalised disparity (0 = no group gap)", anchor="middle", size=10,
             fill=MUTED)
    svg.text(2, y0 - 10, "deviation from the ideal ↑", size=10, fill=MUTED)
    for label, x, y, color in points:
        if not (finite(x) and finite(y)):
            continue
        cx, cy = at(x, y)
        svg.circle(cx, cy, 4, fill=color, stroke=TEXT, title=f"{label}: disparity {x:.3f}, deviation {y:.3f}")
    return svg.render()


def models_section(ctx: ReportContext) -> Section:
    summary = ctx.nonempty("hiring_bias_summary")
    s, ranking = open_section(ctx, "hiring_across_models")
    if ranking is not None and summary is not None:
        variants = list(dict.fromkeys(summary["rationale"]))
        panels = []
        for setting, part in summary.groupby("setting", sort=False):
            points = [(f"{r['model']} · {variant_label(r['rationale'])}", t.as_float(r["disparity"]),
                       t.as_float(r["deviation"]), series_color(variants.index(r["rationale"])))
                      for r in part.to_dict("records")]
            panels.append(scatter_panel(SETTINGS.get(str(setting), str(setting)), points))
        s.figures.append(Figure(panels, legend=[(variant_label(v), series_color(i)) for i, v in enumerate(variants)],
                                caption="Each point is a model under one prompt variant (hover for its name and "
                                        "values); the origin is a fair evaluator without noise — see the noise "
                                        "floor in the disparity table for what a fair but noisy one shows."))
        # in rank order; the rank itself is in the table below (a "1. model" label was cut at 30 characters)
        rows = [BarRow(str(r["model"]), [BarValue("mean disparity", t.as_float(r["mean_disparity"]), series_color(0)),
                                         BarValue("mean deviation", t.as_float(r["mean_deviation"]), series_color(1))])
                for r in ranking.to_dict("records")]
        if len(rows) <= 40:
            s.figures.append(Figure([hbar_panel("Models ranked by mean disparity (lower is better)", rows,
                                                domain=(0.0, max(1e-6, max(b.value for r in rows for b in r.bars))),
                                                width=680, value_format="{:.3f}")],
                                    legend=[("mean disparity", series_color(0)), ("mean deviation", series_color(1))]))
        show_table(s, ctx, "hiring_model_ranking", [
            t.count("rank", "Rank"), t.text("model", "Model"), t.num("mean_disparity", "Mean disparity", 3),
            t.num("mean_deviation", "Mean deviation", 3), t.count("n_conditions", "Conditions averaged"),
        ], caption="Ranking (Fig. 13 of the paper)")
    show_table(s, ctx, "hiring_across_models", [
        t.text("setting", "Setting"), t.text("variant", "Prompt"), t.count("n_models", "Models"),
        t.num("mean_disparity", "Mean disparity", 3), t.ci("min_disparity", "max_disparity", "Range over models", 3),
        t.num("mean_deviation", "Mean deviation", 3), t.ci("min_deviation", "max_deviation", "Range over models", 3),
    ], caption="Means over models", prepare=_prepare)
    first = show_table(s, ctx, "hiring_rank_first", [
        t.text("setting", "Setting"), t.text("variant", "Prompt"), t.text("gender_dominance", "Jobs"),
        t.text("group", "Group"), t.count("n_first", "Models ranking it first"), t.count("n_models", "of models"),
    ], caption="Groups ranked first", prepare=_prepare)
    if first is not None:
        s.notes.append("Ranked first: by win rate in Direct Comparison and by mean score in Score & Shortlist.")
    show_table(s, ctx, "hiring_job_fit_models", [
        t.text("variant", "Prompt"), t.text("gender_dominance", "Jobs"), t.text("ethnicity", "Ethnicity"),
        t.num("win_rate", "Mean win rate over models", 3), t.num("range", "Range", 3), t.count("n_models", "Models"),
    ], caption="Job fit averaged over models (Table 14 of the paper)", prepare=_prepare)
    return s
