"""Report section of the group ordering across models (the paper's RQ3: average ranks, Friedman, Kendall's W)."""

from __future__ import annotations

import pandas as pd

from counterbench.builtin.hiring.sections_common import open_section, variant_label
from counterbench.report import tables as t
from counterbench.report.charts import BarRow, BarValue, hbar_panel
from counterbench.report.context import ReportContext
from counterbench.report.document import Figure, Section, series_color, show_table

SETTINGS = {"compare": "Direct Comparison (win rate)", "score": "Score & Shortlist (mean score)"}


def _prepare(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.assign(variant=frame["rationale"].map(variant_label))
    return out.assign(setting=out["setting"].map(lambda s: SETTINGS.get(str(s), str(s))))


def _rank_chart(ranks: pd.DataFrame) -> Figure | None:
    """Average rank per group (1 = best), one bar per setting × prompt variant."""
    keys = list(dict.fromkeys(zip(ranks["setting"], ranks["rationale"], strict=True)))
    lookup = {(r["setting"], r["rationale"], r["group"]): t.as_float(r["average_rank"])
              for r in ranks.to_dict("records")}
    series = [f"{SETTINGS.get(str(st), str(st))} · {variant_label(ra)}" for st, ra in keys]
    rows = [BarRow(str(group), [BarValue(series[i], lookup.get((*key, group), float("nan")), series_color(i))
                                for i, key in enumerate(keys)])
            for group in dict.fromkeys(ranks["group"])]
    if not rows or len(rows) > 40:
        return None
    top = max((b.value for r in rows for b in r.bars if b.value == b.value), default=1.0)
    return Figure([hbar_panel("Average rank across models (1 = best)", rows, domain=(0.0, max(top, 1.0)), width=680,
                              x_label="average rank", value_format="{:.2f}")],
                  legend=[(name, series_color(i)) for i, name in enumerate(series)],
                  caption="Shorter bars are better-treated groups. Direct Comparison ranks the groups by win rate, "
                          "Score & Shortlist by mean score (not by the Top-Score Rate).")


def ordering_section(ctx: ReportContext) -> Section:
    s, frame = open_section(ctx, "hiring_group_ordering")
    if frame is not None:
        chart = _rank_chart(frame)
        if chart is not None:
            s.figures.append(chart)
    show_table(s, ctx, "hiring_group_ranks", [
        t.text("setting", "Setting (ranked by)"), t.text("variant", "Prompt"), t.text("group", "Group"),
        t.num("average_rank", "Average rank", 2), t.count("n_models", "Models"),
    ], prepare=_prepare)
    tests = show_table(s, ctx, "hiring_friedman", [
        t.text("setting", "Setting (ranked by)"), t.text("variant", "Prompt"), t.num("chi2", "Friedman χ²", 2),
        t.count("df", "df"), t.pvalue("p_value", "p"), t.num("kendalls_w", "Kendall's W", 3),
        t.count("n_models", "Models"),
    ], prepare=_prepare)
    if tests is None and frame is not None:
        s.notes.append("No Friedman test: it " + ctx.unsupported.get("hiring_friedman", "needs several models")
                       .rstrip(".") + ".")
    return s
