"""Turning analysis DataFrames into display tables: column specs, number formats, significance marks.

A :class:`TableView` holds strings only (formatted once, here), so the HTML template escapes them and
the Markdown writer escapes them the same way. A column spec whose source columns are missing from
the frame is skipped, so a table from an older or newer analysis still renders.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from counterbench.stats.inference import too_few_text

DASH = "—"
COLLAPSE_OVER = 12


def is_missing(value: Any) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    try:
        return bool(isinstance(value, float) and math.isnan(value))
    except TypeError:
        return False


def as_float(value: Any) -> float:
    """``value`` as a float, NaN when missing or not a number."""
    if is_missing(value) or isinstance(value, bool | str):
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def fmt_num(value: Any, digits: int = 2, *, signed: bool = False) -> str:
    number = as_float(value)
    if not math.isfinite(number):
        return DASH
    return f"{number:+.{digits}f}" if signed else f"{number:.{digits}f}"


def fmt_int(value: Any) -> str:
    number = as_float(value)
    return DASH if not math.isfinite(number) else f"{round(number):,}"


def fmt_share(value: Any, digits: int = 1) -> str:
    """A share stored as a fraction (0–1), shown as a percentage."""
    number = as_float(value)
    return DASH if not math.isfinite(number) else f"{number * 100:.{digits}f}%"


def fmt_ci(lo: Any, hi: Any, digits: int = 2) -> str:
    a, b = as_float(lo), as_float(hi)
    if not (math.isfinite(a) and math.isfinite(b)):
        return DASH
    return f"[{a:.{digits}f}, {b:.{digits}f}]"


def fmt_p(value: Any) -> str:
    number = as_float(value)
    if not math.isfinite(number):
        return DASH
    if number < 0.001:
        return "<0.001"
    return f"{number:.3f}"


def stars(q: Any) -> str:
    """``***`` q < 0.001, ``**`` q < 0.01, ``*`` q < 0.05, else nothing."""
    number = as_float(q)
    if not math.isfinite(number):
        return ""
    return "***" if number < 0.001 else "**" if number < 0.01 else "*" if number < 0.05 else ""


def fmt_flag(value: Any, yes: str = "✓", no: str = "✗") -> str:
    if is_missing(value):
        return DASH
    if isinstance(value, str):
        value = value.strip().lower() in ("true", "1", "yes")
    return yes if bool(value) else no


def fmt_text(value: Any) -> str:
    return DASH if is_missing(value) else str(value)


Row = Mapping[Any, Any]


@dataclass(frozen=True)
class Col:
    """One display column: a label, the source columns it needs, and how to render a row."""

    label: str
    needs: tuple[str, ...]
    render: Callable[[Row], str]
    numeric: bool = True
    #: kept in view at the table's right edge while a wide table scrolls sideways (the marks)
    pinned: bool = False


def text(name: str, label: str | None = None, rename: Callable[[str], str] | None = None) -> Col:
    def render(r: Row) -> str:
        shown = fmt_text(r[name])
        return rename(shown) if rename is not None and not is_missing(r[name]) else shown

    return Col(label or name.replace("_", " ").capitalize(), (name,), render, numeric=False)


def num(name: str, label: str, digits: int = 2, *, signed: bool = False) -> Col:
    return Col(label, (name,), lambda r: fmt_num(r[name], digits, signed=signed))


def count(name: str, label: str) -> Col:
    return Col(label, (name,), lambda r: fmt_int(r[name]))


def share(name: str, label: str, digits: int = 1) -> Col:
    return Col(label, (name,), lambda r: fmt_share(r[name], digits))


def ci(lo: str = "ci_low", hi: str = "ci_high", label: str = "95% CI", digits: int = 2) -> Col:
    return Col(label, (lo, hi), lambda r: fmt_ci(r[lo], r[hi], digits))


def fmt_rank_range(lo: Any, hi: Any) -> str:
    """A rank interval: ``1–2``, or ``3`` when it holds one rank."""
    a, b = as_float(lo), as_float(hi)
    if not (math.isfinite(a) and math.isfinite(b)):
        return DASH
    return f"{int(a)}" if a == b else f"{int(a)}–{int(b)}"


RANK_NOTE = ("Rank intervals hold for every model at once with 95% confidence (paired slot bootstrap); models whose "
             "intervals overlap are not told apart (model_ranks.csv).")


def rank_range(lo: str = "rank_low", hi: str = "rank_high", label: str = "Rank, joint 95% interval") -> Col:
    return Col(label, (lo, hi), lambda r: fmt_rank_range(r[lo], r[hi]))


def pvalue(name: str, label: str) -> Col:
    return Col(label, (name,), lambda r: fmt_p(r[name]))


def flag(name: str, label: str, yes: str = "✓", no: str = "✗") -> Col:
    return Col(label, (name,), lambda r: fmt_flag(r[name], yes, no), numeric=False)


def mark(label: str, *, significant: str = "significant", testable: str = "testable", n: str = "n_slots",
         unit: str = "matched prompts") -> Col:
    """A corrected mark: ``*`` where ``significant``, the too-little-data words where not ``testable``
    (e.g. "too few jobs to test (n = 3)"), else empty. ``label`` names the family (e.g. "Mark (BH within model)")."""
    def render(r: Row) -> str:
        if testable in r and not is_missing(r[testable]) and fmt_flag(r[testable]) != "✓":
            return too_few_text(as_float(r.get(n)), unit)
        return "*" if fmt_flag(r[significant]) == "✓" else ""

    return Col(label, (significant,), render, numeric=False, pinned=True)


def star_col(name: str, label: str = "Sig.") -> Col:
    return Col(label, (name,), lambda r: stars(r[name]), numeric=False)


@dataclass
class TableView:
    """A display table of strings; ``collapsed`` tables are folded away in the HTML."""

    columns: list[str]
    numeric: list[bool]
    rows: list[list[str]]
    caption: str = ""
    collapsed: bool = False
    total_rows: int = 0
    source: str = ""
    notes: list[str] = field(default_factory=list)
    css: str = ""
    #: per row, a URL for the cell in column ``link_column`` (the answer viewer's page behind it)
    links: list[str] = field(default_factory=list)
    link_column: int = -1
    #: per column, whether it stays in view when the table scrolls sideways (see :attr:`Col.pinned`)
    pinned: list[bool] = field(default_factory=list)
    #: per row, whether it is shown greyed (e.g. a model left out of a ranking)
    muted: list[bool] = field(default_factory=list)


def table_view(
    frame: pd.DataFrame,
    cols: Sequence[Col],
    *,
    caption: str = "",
    source: str = "",
    collapse_over: int | None = COLLAPSE_OVER,
    max_rows: int | None = None,
    css: str = "",
    muted: Callable[[Row], bool] | None = None,
) -> TableView:
    """Render ``frame`` with ``cols`` (skipping specs whose columns are missing); ``css`` classes the table;
    rows for which ``muted`` says yes are shown greyed.

    Pinned columns (the marks) come last, and stay in view at the right edge in the HTML."""
    usable = [c for c in cols if all(n in frame.columns for n in c.needs)]
    usable = [c for c in usable if not c.pinned] + [c for c in usable if c.pinned]  # a mark is the last column
    records = frame.to_dict("records")
    shown = records if max_rows is None else records[:max_rows]
    rows = [[c.render(r) for c in usable] for r in shown]
    view = TableView(
        columns=[c.label for c in usable],
        numeric=[c.numeric for c in usable],
        rows=rows,
        caption=caption,
        collapsed=collapse_over is not None and len(rows) > collapse_over,
        total_rows=len(records),
        source=source,
        css=css,
        pinned=[c.pinned for c in usable],
        muted=[bool(muted(r)) for r in shown] if muted is not None else [],
    )
    if max_rows is not None and len(records) > max_rows:
        view.notes.append(f"Showing {max_rows:,} of {len(records):,} rows; the full table is {source}.")
    return view


def pivot_view(
    frame: pd.DataFrame,
    *,
    index: str,
    columns: str,
    index_order: Sequence[Any],
    column_order: Sequence[Any],
    cell: Callable[[Row], str],
    index_label: str,
    extra: Sequence[tuple[str, Callable[[Sequence[Row]], str]]] = (),
    caption: str = "",
    source: str = "",
    rename_index: Callable[[str], str] | None = None,
    rename_column: Callable[[str], str] | None = None,
) -> TableView:
    """A wide table: one row per ``index`` value, one column per ``columns`` value, cells by ``cell``.

    ``extra`` adds trailing columns computed from the row's records (e.g. an unweighted mean).
    """
    by_key: dict[tuple[Any, Any], Row] = {}
    for record in frame.to_dict("records"):
        by_key.setdefault((record[index], record[columns]), record)
    present_cols = [c for c in column_order if any((i, c) in by_key for i in index_order)]
    rows = []
    for i in index_order:
        records = [by_key[(i, c)] for c in present_cols if (i, c) in by_key]
        if not records:
            continue
        label = rename_index(str(i)) if rename_index else str(i)
        cells = [cell(by_key[(i, c)]) if (i, c) in by_key else DASH for c in present_cols]
        rows.append([label, *cells, *(fn(records) for _, fn in extra)])
    headers = [rename_column(str(c)) if rename_column else str(c) for c in present_cols]
    return TableView(
        columns=[index_label, *headers, *(name for name, _ in extra)],
        numeric=[False, *([True] * (len(present_cols) + len(extra)))],
        rows=rows,
        caption=caption,
        total_rows=len(rows),
        source=source,
    )
