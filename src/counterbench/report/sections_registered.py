"""A section for each registered analysis table the report has no section of its own for.

The analysis summary's ``added_tables`` names them (``counterbench.analyses.table_registry``: a table is
one declaration and one function, and this is where the report shows it): the section's title and blurb
are the table's, its columns are the declared ones, each shown by its type (numbers to three
decimals, counts whole, flags as ✓/✗, anything else as text) — but a column named ``significant`` or
``<what>_significant`` is a mark (``*``, the last column), so the Markdown's key rows show its marked rows first.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from counterbench.report import tables as t
from counterbench.report.context import ReportContext
from counterbench.report.document import Section, attach_table


def _column(frame: pd.DataFrame, name: str) -> t.Col:
    series = frame[name]
    label = name.replace("_", " ").capitalize()
    if name == "significant" or name.endswith("_significant"):  # a mark: `*`, and marked rows are key rows
        what = name.removesuffix("significant").strip("_").replace("_", " ")
        return t.mark(f"Mark ({what})" if what else "Mark", significant=name)
    if pd.api.types.is_bool_dtype(series):
        return t.flag(name, label)
    if pd.api.types.is_integer_dtype(series):
        return t.count(name, label)
    if pd.api.types.is_float_dtype(series):
        return t.Col(label, (name,), lambda r: t.fmt_num(r[name], 3))
    return t.text(name, label)


def registered_sections(ctx: ReportContext) -> list[Section]:
    """One section per table of ``summary["added_tables"]`` (in the analysis's order)."""
    added = ctx.data.summary.get("added_tables")
    if not isinstance(added, Mapping):
        return []
    sections = []
    for name, about in added.items():
        about = about if isinstance(about, Mapping) else {}
        section = Section(f"table-{name}", str(about.get("title") or name), str(about.get("description") or ""))
        frame = attach_table(section, ctx, str(name))
        if frame is not None:
            section.tables.append(t.table_view(frame, [_column(frame, c) for c in frame.columns],
                                               source=f"{name}.csv"))
        sections.append(section)
    return sections
