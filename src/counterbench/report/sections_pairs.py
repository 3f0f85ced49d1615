"""The report's "Pairs per axis" section: how many matched pairs each axis contributes."""

from __future__ import annotations

import math

import pandas as pd

from counterbench.report import tables as t
from counterbench.report.context import ReportContext
from counterbench.report.document import Figure, Section, attach_table, series_color


def pairs_section(ctx: ReportContext) -> Section:
    section = Section(
        "pairs",
        "Pairs per axis",
        "How many matched pairs each axis contributes. Axes with many identities give far more pairs, so they "
        "dominate every pooled number; the per-axis tables weigh axes equally.",
        group="Data",
    )
    frame = attach_table(section, ctx, "pairs_per_axis")
    if frame is None:
        return section
    from counterbench.report.charts import stacked_panel

    rows = [(model, axis_shares(ctx, part.set_index("axis")["share"])) for model, part in ctx.by_model(frame)]
    legend = [(axis, series_color(k)) for k, axis in enumerate(ctx.axes)]
    section.figures.append(Figure([stacked_panel("Share of matched pairs by axis", rows, width=760)], legend))
    section.tables.append(t.pivot_view(
        frame, index="model", columns="axis", index_order=ctx.model_order(frame), column_order=ctx.axes,
        cell=lambda r: f"{t.fmt_int(r['n_pairs'])} ({t.fmt_share(r['share'], 0)})", index_label="Model",
        caption="Matched pairs (share)", source="pairs_per_axis.csv"))
    return section


def axis_shares(ctx: ReportContext, shares: pd.Series) -> list[tuple[str, float, str]]:
    """One model's share of the matched pairs on each of the study's axes, with the axis's colour."""
    return [(axis, t.as_float(shares.get(axis, math.nan)), series_color(k)) for k, axis in enumerate(ctx.axes)]
