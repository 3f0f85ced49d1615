"""A tiny SVG writer that escapes every piece of text and every attribute value.

Charts in the report are hand-written inline SVG: small, crisp, selectable text, no plotting library
at render time and nothing fetched. Labels can come from model output or model names (untrusted),
so text only ever enters the drawing through :func:`markupsafe.escape`; the finished drawing is a
:class:`markupsafe.Markup` that the (autoescaping) templates insert as it is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from markupsafe import Markup, escape

#: the report's palette (colour-blind friendly: Okabe–Ito based)
#: colours of a study's languages, in study order
LANGUAGE_COLORS = ("#1f6fb4", "#e07b00", "#2a9d6f", "#8e44ad")
SERIES_COLORS = ("#1f6fb4", "#e07b00", "#2a9d6f", "#c94f7c", "#7a5cc9", "#8c6d31", "#4a4a4a", "#56b4e9")
TEXT = "#1d2330"
MUTED = "#6b7280"
GRID = "#e3e6eb"

FONT_SIZE = 11
CHAR_WIDTH = 6.3  # average advance of an 11 px sans-serif character, for label layout


def fmt(value: float) -> str:
    """A coordinate with at most one decimal."""
    return f"{value:.1f}".rstrip("0").rstrip(".")


def text_width(text: str, size: float = FONT_SIZE) -> float:
    """Approximate rendered width of ``text`` (no font metrics needed)."""
    return len(text) * CHAR_WIDTH * size / FONT_SIZE


def shorten(text: str, max_chars: int) -> str:
    """``text`` cut to ``max_chars`` with an ellipsis."""
    return text if len(text) <= max_chars else text[: max(1, max_chars - 1)] + "…"


class Svg:
    """Collects SVG elements; every attribute and text value is escaped on the way in."""

    def __init__(self, width: float, height: float, *, label: str) -> None:
        self.width = width
        self.height = height
        self.label = label
        self._parts: list[str] = []

    @staticmethod
    def _attrs(attrs: dict[str, object]) -> str:
        out = []
        for key, value in attrs.items():
            if value is None:
                continue
            if isinstance(value, float):
                value = fmt(value)
            out.append(f' {key.rstrip("_").replace("_", "-")}="{escape(str(value))}"')
        return "".join(out)

    def _element(self, tag: str, attrs: dict[str, object], title: str | None, text: str | None = None) -> None:
        inner = ""
        if title:
            inner += f"<title>{escape(title)}</title>"
        if text is not None:
            inner += str(escape(text))
        if inner:
            self._parts.append(f"<{tag}{self._attrs(attrs)}>{inner}</{tag}>")
        else:
            self._parts.append(f"<{tag}{self._attrs(attrs)}/>")

    def rect(self, x: float, y: float, w: float, h: float, *, fill: str, title: str | None = None,
             stroke: str | None = None, rx: float | None = None, opacity: float | None = None) -> None:
        self._element("rect", {"x": x, "y": y, "width": max(w, 0.0), "height": max(h, 0.0), "fill": fill,
                               "stroke": stroke, "rx": rx, "fill_opacity": opacity}, title)

    def line(self, x1: float, y1: float, x2: float, y2: float, *, stroke: str = GRID, width: float = 1.0,
             dash: str | None = None) -> None:
        self._element("line", {"x1": x1, "y1": y1, "x2": x2, "y2": y2, "stroke": stroke,
                               "stroke_width": width, "stroke_dasharray": dash}, None)

    def circle(self, cx: float, cy: float, r: float, *, fill: str, title: str | None = None,
               stroke: str | None = None) -> None:
        self._element("circle", {"cx": cx, "cy": cy, "r": r, "fill": fill, "stroke": stroke}, title)

    def polygon(self, points: Sequence[tuple[float, float]], *, fill: str, stroke: str,
                opacity: float = 0.15, title: str | None = None, width: float = 1.6) -> None:
        pts = " ".join(f"{fmt(x)},{fmt(y)}" for x, y in points)
        self._element("polygon", {"points": pts, "fill": fill, "fill_opacity": opacity, "stroke": stroke,
                                  "stroke_width": width}, title)

    def text(self, x: float, y: float, text: str, *, anchor: str = "start", size: float = FONT_SIZE,
             fill: str = TEXT, weight: str | None = None, title: str | None = None,
             baseline: str | None = "middle") -> None:
        attrs: dict[str, object] = {"x": x, "y": y, "text_anchor": anchor, "font_size": size, "fill": fill,
                                    "font_weight": weight, "dominant_baseline": baseline}
        self._element("text", attrs, title, text)

    def render(self) -> Markup:
        head = (
            f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" viewBox="0 0 {fmt(self.width)} '
            f'{fmt(self.height)}" width="{fmt(self.width)}" height="{fmt(self.height)}" '
            f'aria-label="{escape(self.label)}">'
        )
        return Markup(head + "".join(self._parts) + "</svg>")  # every part was escaped on the way in


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick positions covering [lo, hi]."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    raw = (hi - lo) / max(count, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    ticks = []
    value = first
    while value <= hi + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    return ticks


def nice_ceiling(value: float) -> float:
    """The smallest "round" number (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8 × 10^k) that is ≥ ``value``."""
    if not math.isfinite(value) or value <= 0:
        return 1.0
    magnitude = 10 ** math.floor(math.log10(value))
    return next(m * magnitude for m in (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10) if m * magnitude >= value * (1 - 1e-12))


def tick_label(value: float) -> str:
    if abs(value) >= 100 or float(value).is_integer():
        return f"{value:.0f}"
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _mix(c1: tuple[int, int, int], c2: tuple[int, int, int], t: float) -> str:
    t = min(max(t, 0.0), 1.0)
    r, g, b = (round(a + (b - a) * t) for a, b in zip(c1, c2, strict=True))
    return f"#{r:02x}{g:02x}{b:02x}"


_WHITE = (255, 255, 255)
_RED = (196, 52, 52)
_BLUE = (33, 102, 172)
_PURPLE = (84, 39, 143)


def sequential_color(value: float, vmax: float) -> str:
    """White (0) to deep purple (``vmax``); grey for missing."""
    if not math.isfinite(value) or vmax <= 0:
        return "#f1f2f4"
    return _mix(_WHITE, _PURPLE, abs(value) / vmax)


def diverging_color(value: float, vmax: float) -> str:
    """Blue (−``vmax``) through white (0) to red (+``vmax``); grey for missing."""
    if not math.isfinite(value) or vmax <= 0:
        return "#f1f2f4"
    return _mix(_WHITE, _RED if value > 0 else _BLUE, abs(value) / vmax)


def ink_for(fill: str) -> str:
    """Black or white text, whichever reads better on ``fill`` (a #rrggbb colour)."""
    r, g, b = (int(fill[i : i + 2], 16) for i in (1, 3, 5))
    return "#ffffff" if 0.299 * r + 0.587 * g + 0.114 * b < 140 else TEXT
