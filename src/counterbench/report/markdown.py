"""Render the report as Markdown (``report.md``): the same sections and tables, without charts.

Cells are escaped for Markdown tables (pipes, HTML-significant characters, emphasis and link
markers), so model text cannot inject HTML or break a table in a Markdown viewer; control,
bidi-override and zero-width characters are shown as escapes (``\\u202e``, see
:mod:`counterbench.report.visible`).
"""

from __future__ import annotations

import re
from typing import Any

from counterbench.report.document import Section
from counterbench.report.tables import TableView
from counterbench.report.visible import show_controls

MAX_MD_ROWS = 40
#: rows of a folded table shown in a section that shows no other table
MD_KEY_ROWS = 5
_SPECIAL = re.compile(r"([\\|])")
_LINKISH = re.compile(r"([\[\]])")


def md_escape(text: str) -> str:
    """One line of Markdown-safe text: HTML escaped, pipes and backslashes backslashed, and link brackets
    neutralised when the text holds link syntax (so model text cannot add HTML, links or table cells)."""
    one_line = re.sub(r"\s+", " ", show_controls(str(text)))
    html_safe = one_line.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    out = _SPECIAL.sub(r"\\\1", html_safe)
    return _LINKISH.sub(r"\\\1", out) if "](" in out or "]:" in out else out


def md_inline(text: str) -> str:
    """Like :func:`md_escape`, but `backticked` parts stay code spans (their content shows literally)."""
    parts = show_controls(str(text)).split("`")
    if len(parts) % 2 == 0:  # unbalanced: treat everything as text
        return md_escape(text)
    return "".join(md_escape(p) if i % 2 == 0 else f"`{' '.join(p.split())}`" for i, p in enumerate(parts)).strip()


def md_table(view: TableView, max_rows: int = MAX_MD_ROWS) -> list[str]:
    lines = []
    if view.caption:
        lines += [f"**{md_escape(view.caption)}**", ""]
    lines.append("| " + " | ".join(md_escape(c).strip() for c in view.columns) + " |")
    lines.append("|" + "|".join("---:" if n else "---" for n in view.numeric) + "|")
    for row in view.rows[:max_rows]:
        lines.append("| " + " | ".join(md_escape(c).strip() or " " for c in row) + " |")
    hidden = view.total_rows - min(len(view.rows), max_rows)
    if hidden > 0:
        where = f" in `{view.source}`" if view.source else ""
        lines.append("")
        lines.append(f"_{hidden:,} more rows{where}._")
    lines += [md_escape(n) for n in view.notes]
    lines.append("")
    return lines


def key_rows(view: TableView, most: int = MD_KEY_ROWS) -> list[int]:
    """The rows a folded table shows in Markdown: its marked rows (a star in a mark column) first, then
    its first rows, up to ``most``, in table order."""
    marks = [i for i, label in enumerate(view.columns) if label.startswith(("Mark", "Sig"))]
    marked = [r for r, row in enumerate(view.rows) if any(row[i].strip().startswith("*") for i in marks)]
    chosen = set(marked[:most])
    for r in range(len(view.rows)):
        if len(chosen) >= most:
            break
        chosen.add(r)
    return sorted(chosen)


def md_key_rows(view: TableView) -> list[str]:
    """A folded table's key rows (:func:`key_rows`) with where the rest are."""
    picked = key_rows(view)
    part = TableView(columns=view.columns, numeric=view.numeric, rows=[view.rows[r] for r in picked],
                     caption=view.caption, total_rows=len(picked))
    lines = md_table(part)
    where = f"`{view.source}`" if view.source else "the HTML report"
    marks = any(label.startswith(("Mark", "Sig")) for label in view.columns)
    order = "marked rows first, then the first rows" if marks else "the first rows"
    return [*lines, f"_Key rows: {len(picked):,} of {view.total_rows:,} ({order}); all rows in {where}._", ""]


def md_section(section: Section) -> list[str]:
    lines = [f"## {md_escape(section.title)}", "", md_escape(section.blurb), ""]
    if section.unsupported:
        return [*lines, f"> **Not available for this run.** {md_inline(section.unsupported)}", ""]
    if section.figures:
        lines += ["_Charts: see the HTML report._", ""]
    # a section whose tables are all folded away shows its first table's key rows, not only a file name
    keyed = any(not view.collapsed for view in section.tables)
    for view in section.tables:
        if view.collapsed and not keyed and view.rows:
            lines += md_key_rows(view)
            keyed = True
            continue
        if view.collapsed:
            where = f"`{view.source}`" if view.source else "the HTML report"
            lines += [f"_{md_escape(view.caption or 'Full table')}: {view.total_rows:,} rows in {where}._", ""]
            continue
        lines += md_table(view)
    lines += [md_inline(n) for n in section.notes]
    if section.notes:
        lines.append("")
    return lines


def render_markdown(page: dict[str, Any]) -> str:
    """Render the page model built by :func:`counterbench.report.api.page_model`."""
    lines = [f"# {md_escape(page['title'])}", "", md_escape(page["subtitle"]), ""]
    for banner in page["banners"]:
        lines += [f"> **⚠ {md_escape(banner.title)}** {md_escape(banner.text)}", ""]
    lines += ["Models: " + ", ".join(f"{md_escape(m['name'])} ({m['kind_label']})" for m in page["models"]), ""]
    lines += [f"- {md_escape(h)}" for h in page["headlines"]]
    lines.append("")
    for section in page["sections"]:
        lines += md_section(section)
    lines.append(f"_Written by counterbench {page['version']} on {page['generated_at']}._")
    return "\n".join(lines) + "\n"
