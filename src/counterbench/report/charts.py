"""Chart panels as inline SVG: bars with confidence intervals, heatmaps, radars, stacked shares.

Each function draws one panel and returns escaped :class:`~markupsafe.Markup`; sections put several
panels side by side (small multiples) and draw the shared legend in HTML. Inputs are plain Python
values prepared by :mod:`counterbench.report.sections`; NaN means "no value" and is drawn as a gap
(bars) or a grey cell (heatmaps), never as zero.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from markupsafe import Markup

from counterbench.report.svg import (
    CHAR_WIDTH,
    GRID,
    MUTED,
    TEXT,
    Svg,
    diverging_color,
    ink_for,
    nice_ticks,
    sequential_color,
    shorten,
    text_width,
    tick_label,
)

#: a panel's own width leaves room for row labels of this many characters; a longer label is shown in
#: full all the same, the panel widened by what it needs more (the plot keeps its width)
LABEL_ROOM_CHARS = 30


def finite(value: float | None) -> bool:
    return value is not None and isinstance(value, int | float) and math.isfinite(value)


@dataclass
class BarValue:
    """One bar: ``value`` with an optional interval ``[lo, hi]`` in colour ``color``."""

    series: str
    value: float
    color: str
    lo: float = math.nan
    hi: float = math.nan
    mark: str = ""


@dataclass
class BarRow:
    """A labelled row of one or more bars, plus optional grey dots (e.g. each model's value)."""

    label: str
    bars: list[BarValue]
    dots: list[tuple[str, float]] = field(default_factory=list)


#: a scale more than this many times the panel's typical value (the median magnitude of its bars, interval ends and
#: dots) leaves most bars a few pixels long: :func:`bar_domain` stops there and :func:`hbar_panel` cuts what runs
#: past it at the edge, saying so under the plot (a 76-million-% gap of nonsense answers beside gaps of 50%)
READABLE_RATIO = 100.0


def bar_domain(rows: Sequence[BarRow], *, include_zero: bool = True) -> tuple[float, float]:
    """The x range that holds every value, interval end and dot of ``rows`` within a readable scale: values more
    than :data:`READABLE_RATIO` times the typical magnitude are left outside (drawn cut at the edge)."""
    values = [v for r in rows for b in r.bars for v in (b.value, b.lo, b.hi) if finite(v)]
    values += [v for r in rows for _, v in r.dots if finite(v)]
    magnitudes = sorted(abs(v) for v in values if v != 0)
    if magnitudes:
        limit = READABLE_RATIO * magnitudes[(len(magnitudes) - 1) // 2]
        values = [v for v in values if abs(v) <= limit]
    if include_zero:
        values.append(0.0)
    if not values:
        return 0.0, 1.0
    lo, hi = min(values), max(values)
    if hi == lo:
        hi = lo + 1.0
    pad = (hi - lo) * 0.04
    return (lo - pad if lo < 0 else lo), hi + pad


def _label_width(labels: Sequence[str]) -> float:
    """The left margin: the longest row label in full (never shortened), and the gap before the plot."""
    return max(max((text_width(s) for s in labels), default=0.0) + 14, 60.0)


def _widened(width: float, label_w: float) -> float:
    """``width`` plus what a margin wider than :data:`LABEL_ROOM_CHARS` characters takes from the plot."""
    return width + max(0.0, label_w - (LABEL_ROOM_CHARS * CHAR_WIDTH + 14))


def hbar_panel(
    title: str,
    rows: Sequence[BarRow],
    *,
    domain: tuple[float, float] | None = None,
    width: float = 460,
    x_label: str = "",
    bar_height: float = 11,
    value_format: str = "{:.1f}",
    name_bars: bool = False,
) -> Markup:
    """Horizontal bars (one per series in each row) with interval whiskers and value labels; row labels in
    full (the margin fits the longest). ``name_bars`` writes each bar's series (its model) after its value, for
    rows that hold several models' bars (colour alone does not tell them apart)."""
    lo, hi = domain or bar_domain(rows)
    label_w = _label_width([r.label for r in rows])
    width = _widened(width, label_w)
    # room for the longest value label and its mark ("+0.125*"), so the mark is never cut at the edge
    def value_label(bar: BarValue) -> str:
        return value_format.format(bar.value) + bar.mark + (f" · {bar.series}" if name_bars else "")

    value_labels = [value_label(b) for r in rows for b in r.bars if finite(b.value)]
    value_w = max(44.0, max((len(v) for v in value_labels), default=0) * CHAR_WIDTH + 10)
    if name_bars:  # the names widen the panel, not narrow the plot
        width += value_w - 44.0
    plot_x0, plot_x1 = label_w, width - value_w
    per_row = max(len(r.bars) for r in rows) * (bar_height + 2) + 7 if rows else 20
    top = 24.0
    height = top + per_row * len(rows) + 30
    svg = Svg(width, height, label=title)
    svg.text(0, 10, title, weight="600", size=12)

    def x_of(v: float) -> float:
        """The x of ``v``, at the plot's edge when ``v`` lies past the scale (:func:`_cut_mark` marks it)."""
        return plot_x0 + (min(max(v, lo), hi) - lo) / (hi - lo) * (plot_x1 - plot_x0)

    bottom = top + per_row * len(rows)
    past = sum(1 for r in rows for b in r.bars for v in (b.value, b.lo, b.hi) if finite(v) and not lo <= v <= hi)
    past += sum(1 for r in rows for _, v in r.dots if finite(v) and not lo <= v <= hi)
    if past:
        svg.height += 14
    for tick in nice_ticks(lo, hi, 4):
        if lo <= tick <= hi:
            svg.line(x_of(tick), top - 2, x_of(tick), bottom, stroke=GRID)
            svg.text(x_of(tick), bottom + 10, tick_label(tick), anchor="middle", size=10, fill=MUTED)
    if x_label:
        svg.text((plot_x0 + plot_x1) / 2, bottom + 23, x_label, anchor="middle", size=10, fill=MUTED)
    zero = x_of(0.0) if lo <= 0 <= hi else plot_x0
    for i, row in enumerate(rows):
        y = top + i * per_row + 3
        svg.text(label_w - 8, y + (per_row - 7) / 2, row.label, anchor="end", title=row.label)
        for j, bar in enumerate(row.bars):
            by = y + j * (bar_height + 2)
            tip = f"{row.label} · {bar.series}: " + (value_format.format(bar.value) if finite(bar.value) else "—")
            if finite(bar.lo) and finite(bar.hi):
                tip += f" (95% CI {value_format.format(bar.lo)} to {value_format.format(bar.hi)})"
            if not finite(bar.value):
                svg.text(zero + 4, by + bar_height / 2, "no data", size=9, fill=MUTED)
                continue
            x0, x1 = sorted((zero, x_of(bar.value)))
            svg.rect(x0, by, x1 - x0, bar_height, fill=bar.color, title=tip, opacity=0.85)
            cy = by + bar_height / 2
            if finite(bar.lo) and finite(bar.hi):
                svg.line(x_of(bar.lo), cy, x_of(bar.hi), cy, stroke=TEXT, width=1.2)
                for end in (bar.lo, bar.hi):
                    if lo <= end <= hi:
                        svg.line(x_of(end), cy - 3, x_of(end), cy + 3, stroke=TEXT, width=1.2)
            cut = {end > hi for end in (bar.value, bar.lo, bar.hi) if finite(end) and not lo <= end <= hi}
            for right in sorted(cut):
                _cut_mark(svg, plot_x1 if right else plot_x0, cy, right, tip,
                          ink_for(bar.color) if len(bar.color) == 7 else TEXT)
            svg.text(plot_x1 + 4, by + bar_height / 2, value_label(bar), size=10, fill=MUTED)
        for name, value in row.dots:
            if finite(value):
                svg.circle(x_of(value), y + (per_row - 7) / 2, 2.6, fill="#ffffff", stroke=TEXT,
                           title=f"{name}: {value_format.format(value)}")
    if lo < 0 < hi:
        svg.line(zero, top - 2, zero, bottom, stroke=TEXT, width=1)
    if past:
        svg.text(0, height + 6, f"» {past} value{'s' if past > 1 else ''} past the scale: cut at its edge "
                 "(each bar's value is written beside it)", size=10, fill=MUTED)
    return svg.render()


def _cut_mark(svg: Svg, x: float, y: float, right: bool, title: str, fill: str) -> None:
    """A chevron at the plot's edge where a bar or interval runs past the scale."""
    step = -5.0 if right else 5.0  # inside the plot, clear of the value written beside it
    svg.text(x + step, y, "»" if right else "«", anchor="middle", size=11, weight="600", fill=fill, title=title)


@dataclass
class Cell:
    value: float
    text: str = ""
    title: str = ""


def heatmap_panel(
    title: str,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    cells: Sequence[Sequence[Cell]],
    *,
    scale: str = "sequential",
    vmax: float | None = None,
    cell_width: float = 62,
    cell_height: float = 20,
    row_groups: Sequence[str] | None = None,
) -> Markup:
    """A grid of coloured cells with their values written in (``scale``: sequential or diverging).

    ``row_groups`` (one entry per row, ``""`` to continue the group above) puts a group heading (e.g.
    the model) above the first row of each group, with a rule between groups.
    """
    values = [abs(c.value) for row in cells for c in row if finite(c.value)]
    vmax = vmax if vmax is not None else (max(values) if values else 1.0) or 1.0
    groups = list(row_groups) if row_groups is not None else [""] * len(row_labels)
    group_h = 18.0
    label_w = _label_width(row_labels)
    fit = max(int((cell_width - 2) / 5.5), 3)
    headers = [_header_lines(col, fit) for col in col_labels]
    cell_width = max([cell_width, *(text_width(line, 10) + 8 for lines in headers for line in lines)])
    top = 20.0 + 12 * max([2, *map(len, headers)])
    width = max([label_w + cell_width * len(col_labels) + 4,
                 *(text_width(g, 12) + 4 for g in groups if g)])  # a group heading in full
    height = top + cell_height * len(row_labels) + group_h * sum(1 for g in groups if g) + 6
    svg = Svg(width, height, label=title)
    svg.text(0, 10, title, weight="600", size=12)
    for j, (col, lines) in enumerate(zip(col_labels, headers, strict=True)):
        cx = label_w + j * cell_width + cell_width / 2
        for k, line in enumerate(lines):
            svg.text(cx, top - 8 - 12 * (len(lines) - 1 - k), line, anchor="middle", size=10, fill=MUTED, title=col)
    colour = diverging_color if scale == "diverging" else sequential_color
    y = top
    for i, (label, row) in enumerate(zip(row_labels, cells, strict=True)):
        if groups[i]:
            if i > 0:
                svg.line(0, y + 3, width, y + 3, stroke="#9aa1ad", width=1)
            svg.text(0, y + group_h / 2 + 3, groups[i], weight="600")
            y += group_h
        svg.text(label_w - 8, y + cell_height / 2, label, anchor="end", title=label)
        for j, cell in enumerate(row):
            fill = colour(cell.value, vmax)
            x = label_w + j * cell_width
            svg.rect(x + 1, y + 1, cell_width - 2, cell_height - 2, fill=fill,
                     title=cell.title or f"{label} · {col_labels[j]}: {cell.text or '—'}")
            svg.text(x + cell_width / 2, y + cell_height / 2 + 0.5, cell.text if finite(cell.value) else "—",
                     anchor="middle", size=10, fill=ink_for(fill) if finite(cell.value) else MUTED)
        y += cell_height
    return svg.render()


def _header_lines(text: str, fit: int) -> list[str]:
    """A column header in full, wrapped into lines of at most ``fit`` characters at spaces and after
    slashes (a longer word keeps a line of its own; the column is widened for it)."""
    words = [w for w in text.replace("/", "/ ").split(" ") if w]
    lines: list[str] = []
    for word in words:
        if lines and len(lines[-1]) + (0 if lines[-1].endswith("/") else 1) + len(word) <= fit:
            lines[-1] += word if lines[-1].endswith("/") else " " + word
        else:
            lines.append(word)
    return lines or [text]


def radar_panel(
    title: str,
    axes: Sequence[str],
    series: Sequence[tuple[str, str, Sequence[float]]],
    *,
    rmax: float,
    size: float = 330,
) -> Markup:
    """A radar (spider) chart: one polygon per series over ``axes`` (values from 0 to ``rmax``)."""
    label_room = 76.0
    radius = (size - 2 * label_room) / 2
    cx, cy = size / 2, 40 + radius
    height = cy + radius + 28
    svg = Svg(size, height, label=title)
    svg.text(size / 2, 10, shorten(title, int(size / CHAR_WIDTH)), anchor="middle", weight="600", size=12,
             title=title)
    n = len(axes)
    rmax = rmax if rmax > 0 else 1.0

    def point(k: int, value: float) -> tuple[float, float]:
        angle = -math.pi / 2 + 2 * math.pi * k / n
        r = radius * min(max(value, 0.0), rmax) / rmax
        return cx + r * math.cos(angle), cy + r * math.sin(angle)

    for frac in (0.25, 0.5, 0.75, 1.0):
        ring = [point(k, rmax * frac) for k in range(n)]
        svg.polygon(ring, fill="none", stroke=GRID, opacity=0.0, width=1)
    for frac in (0.5, 1.0):
        svg.text(cx + 4, cy - radius * frac + 7, tick_label(rmax * frac), size=9, fill=MUTED)
    for k, axis in enumerate(axes):
        x, y = point(k, rmax)
        svg.line(cx, cy, x, y, stroke=GRID)
        lx, ly = point(k, rmax * 1.08)
        anchor = "middle" if abs(lx - cx) < 8 else ("start" if lx > cx else "end")
        ly += -6 if ly < cy - radius * 0.9 else (7 if ly > cy + radius * 0.9 else 0)
        svg.text(lx, ly, shorten(axis, 14), anchor=anchor, size=10.5, fill=TEXT, title=axis)
    for name, color, values in series:
        pts = [point(k, v if finite(v) else 0.0) for k, v in enumerate(values)]
        if not any(finite(v) for v in values):
            continue
        svg.polygon(pts, fill=color, stroke=color, title=name)
        for (x, y), axis, v in zip(pts, axes, values, strict=True):
            if finite(v):
                svg.circle(x, y, 2.4, fill=color, title=f"{name} · {axis}: {v:.1f}")
    return svg.render()


def stacked_panel(
    title: str,
    rows: Sequence[tuple[str, Sequence[tuple[str, float, str]]]],
    *,
    width: float = 640,
    bar_height: float = 16,
) -> Markup:
    """Horizontal 100% bars: each row is (label, [(part, share 0..1, colour), ...])."""
    label_w = _label_width([r[0] for r in rows])
    width = _widened(width, label_w)
    top = 24.0
    height = top + len(rows) * (bar_height + 6) + 6
    svg = Svg(width, height, label=title)
    svg.text(0, 10, title, weight="600", size=12)
    plot_w = width - label_w - 6
    for i, (label, parts) in enumerate(rows):
        y = top + i * (bar_height + 6)
        svg.text(label_w - 8, y + bar_height / 2, label, anchor="end", title=label)
        x = label_w
        for part, share, color in parts:
            if not finite(share) or share <= 0:
                continue
            w = plot_w * share
            svg.rect(x, y, w, bar_height, fill=color, title=f"{label} · {part}: {share * 100:.1f}%")
            caption = f"{part} {share * 100:.0f}%"
            if text_width(caption, 10) + 6 < w:
                svg.text(x + 4, y + bar_height / 2 + 0.5, caption, size=10, fill=ink_for(color))
            elif text_width(f"{share * 100:.0f}%", 10) + 4 < w:
                svg.text(x + w / 2, y + bar_height / 2 + 0.5, f"{share * 100:.0f}%", anchor="middle", size=10,
                         fill=ink_for(color))
            x += w
    return svg.render()
