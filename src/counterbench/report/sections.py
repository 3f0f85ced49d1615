"""The report's sections in order; each builder takes the shared context and returns a Section."""

from __future__ import annotations

from collections.abc import Callable

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


def build_sections(ctx: ReportContext) -> list[Section]:
    """Every result section, in report order (the frame — banners, samples, methods — is added by the renderers)."""
    return [build(ctx) for build in SECTION_BUILDERS]
