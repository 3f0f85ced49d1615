"""The section of ``group_gaps_over_names``: group comparisons that generalise over names (names as a
sample of their group), beside the matched group gaps that hold for the study's own names."""

from __future__ import annotations

from counterbench.report import tables as t
from counterbench.report.context import ReportContext
from counterbench.report.document import Section, attach_table

NAME = "group_gaps_over_names"
BLURB = (
    "Two kinds of group inference. The group rows of 'Matched gaps' hold for these names: they compare the "
    "names the study lists, slot by slot, and a model that reacts to one name (not to its group) moves them. "
    "This table treats each group's names as a sample of names like these: each name's mean minus its slots' "
    "mean is one observation, and Welch's t compares the groups over names — so its interval also carries "
    "how much names of one group differ among themselves, and it is wider. Read it when the question is "
    "about the groups (would other names of these groups fare the same?). A group needs at least 3 names. "
    "A mark (*) needs Benjamini–Hochberg q ≤ 0.05 within one model's rows of this table and a 95% interval "
    "that excludes 0.")


def _mark(r: t.Row) -> str:
    if t.fmt_flag(r.get("testable")) != "✓":
        return str(r.get("note") or "not tested")
    return "*" if t.fmt_flag(r.get("significant")) == "✓" else ""


def names_sample_section(ctx: ReportContext) -> Section:
    """The table's section (its rows, or why it has none)."""
    section = Section(NAME, "Groups over names like these (names as a sample)", BLURB)
    frame = attach_table(section, ctx, NAME)
    if frame is None:
        return section
    section.tables.append(t.table_view(frame, [
        t.text("model", "Model"), t.text("use_case", "Use case", ctx.use_case_label),
        t.text("language", "Language", ctx.language_label), t.text("facet", "Compared"),
        t.text("comparison", "Group"), t.text("reference", "Reference group"),
        t.num("comparison_mean", "Mean of its names"), t.num("reference_mean", "Reference names' mean"),
        t.num("difference", "Difference", signed=True), t.ci(), t.text("difference_unit", "Unit"),
        t.count("n_names_comparison", "Names"), t.count("n_names_reference", "Reference names"),
        t.pvalue("q_value", "q"), t.Col("Mark (BH within model)", ("significant",), _mark, numeric=False),
    ], source=f"{NAME}.csv"))
    return section
