"""The report's building blocks — sections, figures — and the "what run would fill this" notes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pandas as pd
from markupsafe import Markup

from counterbench.report.context import ReportContext
from counterbench.report.svg import LANGUAGE_COLORS, SERIES_COLORS
from counterbench.report.tables import Col, TableView, table_view


@dataclass
class Figure:
    """One or more chart panels (small multiples) sharing a legend."""

    panels: list[Markup]
    legend: list[tuple[str, str]] = field(default_factory=list)
    caption: str = ""


@dataclass
class Section:
    """A titled part of the report: plain-language blurb, figures, tables, or an "unsupported" note."""

    key: str
    title: str
    blurb: str
    figures: list[Figure] = field(default_factory=list)
    tables: list[TableView] = field(default_factory=list)
    unsupported: str | None = None
    notes: list[str] = field(default_factory=list)
    group: str = "Results"


AUDIT = "counterbench audit STUDY --model MODEL"

#: what run would fill a table the data cannot support (used when the analysis gives no reason)
FILL_HINTS: dict[str, str] = {
    "leaderboard": f"No matched pairs yet: run at least two identifiers of one axis, e.g. `{AUDIT} --preset quick`.",
    "axis_mean_delta": f"No matched pairs yet: run at least two identifiers of one axis (`{AUDIT}`).",
    "use_case_mean_delta": f"No matched pairs yet: run at least two identifiers of one axis (`{AUDIT}`).",
    "kendalls_w": "Needs at least two profiles (blocks) per use case and axis: run without `--profile`, "
    "or with the quick preset (two or three profiles per use case).",
    "kendalls_w_axis": "Needs at least two profiles (blocks) per use case and axis: run without `--profile`.",
    "cpg": "Needs both identifiers of a canonical pair in matched slots: run without "
    "`--identifier`, or include both members of a pair.",
    "mog": f"No matched pairs yet: run at least two identifiers of one axis (`{AUDIT}`).",
    "identifier_deviation": f"No matched pairs yet: run at least two identifiers of one axis (`{AUDIT}`).",
    "qv_robustness": "Needs at least two question variants: run without `--question-variant` "
    "(or with the quick preset, which asks every variant).",
    "merit_sensitivity": "Needs at least two profiles per use case: run without `--profile`.",
    "profile_rank_agreement": "Needs at least two profiles per use case: run without `--profile`.",
    "language_moderation": "Needs answers in two of the study's languages: run without `--language` "
    "(or name two languages with `--language`).",
    "fairness_ablation": "Needs the fairness-instruction variant next to the standard one: run with "
    "`--variant standard --variant fairness`.",
    "parse_health": f"No responses in the store yet: `{AUDIT}`.",
    "pairs_per_axis": f"No matched pairs yet: run at least two identifiers of one axis (`{AUDIT}`).",
}


def attach_table(section: Section, ctx: ReportContext, name: str, *also: str) -> pd.DataFrame | None:
    """The rows of table ``name`` for ``section`` (``None`` when empty), noting why when there are none.

    Sets ``section.unsupported`` from :func:`unsupported_note` over ``name`` and ``also``.
    """
    section.unsupported = unsupported_note(ctx, name, *also)
    return ctx.nonempty(name)


def show_table(section: Section, ctx: ReportContext, name: str, cols: Sequence[Col], *, caption: str = "",
               prepare: Callable[[pd.DataFrame], pd.DataFrame] | None = None, max_rows: int | None = None,
               ) -> pd.DataFrame | None:
    """Append table ``name`` to ``section`` — its rows (after ``prepare``) in ``cols``, its CSV as the
    source — and return those rows; ``None``, and nothing appended, when the table is empty."""
    frame = ctx.nonempty(name)
    if frame is None:
        return None
    if prepare is not None:
        frame = prepare(frame)
    section.tables.append(table_view(frame, cols, caption=caption, source=f"{name}.csv", max_rows=max_rows))
    return frame


def unsupported_note(ctx: ReportContext, *names: str) -> str | None:
    """Why a section has nothing to show (``None`` when one of ``names`` has rows).

    Uses the analysis's own explanation (``summary["unsupported"]``) when it gave one.
    """
    for name in names:
        frame = ctx.table(name)
        if frame is not None and not frame.empty:
            return None
    for name in names:
        if name in ctx.unsupported:
            return readable_hint(ctx.unsupported[name])
    for name in names:
        if ctx.table(name) is None:
            return (f"The analysis did not write the `{name}` table; re-run `counterbench analyze` "
                    "(or `counterbench report --store`) with this version of counterbench.")
    return FILL_HINTS.get(names[0], "The data cannot support this section.")


def readable_hint(text: str) -> str:
    """An analysis hint as a sentence, with command-line options marked as code (unless already marked)."""
    import re

    text = text.strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    if "`" not in text:
        text = re.sub(r"(--[a-z][a-z0-9-]*(?: (?!--)[A-Za-z0-9_:./-]+)?)", r"`\1`", text)
    return text if text.endswith((".", ")")) else text + "."


def language_legend(languages: list[str]) -> list[tuple[str, str]]:
    from counterbench.report.context import language_name

    return [(language_name(lang), lang_color(lang)) for lang in languages]


def lang_color(language: str) -> str:
    """The study's first language in the first language colour, its second in the second, and so on."""
    from counterbench.report.context import study_language_order

    order = study_language_order()
    if language in order and order.index(language) < len(LANGUAGE_COLORS):
        return LANGUAGE_COLORS[order.index(language)]
    return SERIES_COLORS[4]


def series_color(index: int) -> str:
    return SERIES_COLORS[index % len(SERIES_COLORS)]
