"""The answers behind a report: one viewer link per model × use case, in every report whatever its study.

Tables that compare identities link their own rows to their slots (:func:`counterbench.report.links.link_rows`);
this section makes sure a report whose sections have no such table — a Python study's own sections, a
study of any outcome kind — still opens its answers in the viewer, use case by use case.
"""

from __future__ import annotations

import pandas as pd

from counterbench.report import tables as t
from counterbench.report.context import ReportContext
from counterbench.report.document import Section
from counterbench.report.links import link_rows


def answers_section(ctx: ReportContext) -> Section | None:
    """A table of model × use case rows, each linking to the slots of its answers (``None`` with no model)."""
    if not ctx.models:
        return None
    use_cases: list[str | None] = list(ctx.use_cases) or [None]
    frame = pd.DataFrame([{"model": m, "use_case": u, "open": "slots, widest spread first"}
                          for m in ctx.models for u in use_cases])
    section = Section(
        "answers", "The answers behind this report",
        "Every answer each model gave, use case by use case, in the answer viewer: each slot (one prompt asked "
        "once per identity) side by side, widest spread first — the spread in the outcome's own comparison "
        "(Δ% for amounts, percentage points for yes/no answers, points for scores).",
    )
    cols = [t.text("model", "Model"), t.text("use_case", "Use case", ctx.use_case_label), t.text("open", "Answers")]
    section.tables.append(t.table_view(frame, cols, collapse_over=None))
    link_rows(section.tables[-1], frame.drop(columns=["open"]), ctx, "Answers")
    return section
