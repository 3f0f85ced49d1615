"""The SHAP section's strip chart: per attribute, each dot one response's SHAP value, coloured by its level,
with a legend of the levels under each strip (the paper's Figures 3, 4)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from markupsafe import Markup

from counterbench.report.svg import MUTED, SERIES_COLORS, Svg, nice_ticks, text_width, tick_label


def beeswarm_panel(points: pd.DataFrame, title: str, width: float = 640) -> Markup:
    """A beeswarm-style strip per attribute: each dot one response's SHAP value, colour = level, with a
    legend of the attribute's levels under its strip."""
    attrs = list(points.groupby("attribute")["shap"].apply(lambda s: s.abs().mean()).sort_values(
        ascending=False).index)
    lo, hi = float(points["shap"].min()), float(points["shap"].max())
    span = max(hi - lo, 1e-9)
    left, right, strip_h, legend_h = 130.0, 20.0, 26.0, 13.0
    levels_of = {attr: list(dict.fromkeys(points.loc[points["attribute"].eq(attr), "level"].astype(str)))
                 for attr in attrs}
    legends = {attr: _legend_lines(levels, width - left - right) for attr, levels in levels_of.items()}
    tops, y = [], 30.0
    for attr in attrs:
        tops.append(y)
        y += strip_h + legend_h * len(legends[attr]) + 4
    svg = Svg(width, y + 16, label=title)
    svg.text(left, 12, title, weight="600")
    x = lambda v: left + (v - lo) / span * (width - left - right)  # noqa: E731
    for tick in nice_ticks(lo, hi):
        if lo <= tick <= hi:
            svg.line(x(tick), 22, x(tick), y)
            svg.text(x(tick), y + 10, tick_label(tick), anchor="middle", size=9, fill=MUTED)
    rng = np.random.default_rng(0)
    for top, attr in zip(tops, attrs, strict=True):
        y0 = top + strip_h / 2
        svg.text(left - 6, y0, attr, anchor="end")
        part = points[points["attribute"].eq(attr)]
        levels = levels_of[attr]
        for v, level in zip(part["shap"].to_numpy(dtype=float), part["level"].astype(str), strict=True):
            color = SERIES_COLORS[levels.index(level) % len(SERIES_COLORS)]
            svg.circle(x(v), y0 + rng.uniform(-strip_h / 3, strip_h / 3), 2.0, fill=color, title=f"{attr}={level}")
        for n, line in enumerate(legends[attr]):
            ly = top + strip_h + legend_h * n + 6
            for offset, level in line:
                svg.circle(left + offset + 4, ly - 3, 3.5, fill=SERIES_COLORS[levels.index(level) % len(SERIES_COLORS)])
                svg.text(left + offset + 11, ly, level, size=9, fill=MUTED)
    return svg.render()


def _legend_lines(levels: list[str], room: float) -> list[list[tuple[float, str]]]:
    """The levels laid out as legend entries (dot + name), wrapped onto as many lines as the width needs."""
    lines: list[list[tuple[float, str]]] = [[]]
    offset = 0.0
    for level in levels:
        entry = 11 + text_width(level, 9) + 12
        if lines[-1] and offset + entry > room:
            lines.append([])
            offset = 0.0
        lines[-1].append((offset, level))
        offset += entry
    return lines
