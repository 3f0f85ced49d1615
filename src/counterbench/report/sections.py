"""The amount family's sections in order (:data:`SECTION_BUILDERS`, the ``report_sections`` of
``counterbench.families.amount.family``), and :func:`family_sections`: the sections of every table family the
analysed kinds call for. Each builder takes the shared context and returns a Section."""

from __future__ import annotations

from collections.abc import Callable

from counterbench.analyses.table_families import analysed_kinds, families_for
from counterbench.registry import load_reference
from counterbench.report.context import ReportContext
from counterbench.report.document import Section
from counterbench.report.sections_consistency import (
    fairness_section,
    kendalls_w_section,
    language_section,
    merit_section,
    parse_section,
    profile_agreement_section,
    qv_section,
)
from counterbench.report.sections_gaps import (
    axis_section,
    cpg_section,
    identifier_section,
    leaderboard_section,
    mog_section,
    use_case_section,
)
from counterbench.report.sections_pairs import pairs_section
from counterbench.report.sections_power import power_section

SECTION_BUILDERS: tuple[Callable[[ReportContext], Section], ...] = (
    leaderboard_section,
    axis_section,
    use_case_section,
    cpg_section,
    mog_section,
    identifier_section,
    kendalls_w_section,
    qv_section,
    profile_agreement_section,
    merit_section,
    language_section,
    fairness_section,
    power_section,
    parse_section,
    pairs_section,
)


def family_sections(ctx: ReportContext) -> tuple[list[Section], bool]:
    """The sections of the table families the analysed kinds call for (each family's ``report_sections``, in
    report order), and whether any family applies. The frame (banners, samples, methods) is the renderers'."""
    families = families_for(analysed_kinds(ctx.data.summary, ctx.data.tables))
    builders = [build for f in families if f.report_sections for build in load_reference(f.report_sections)]
    return [build(ctx) for build in builders], bool(families)
