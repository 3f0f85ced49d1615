"""Sections a Python study brings itself: ``study.report_sections(ctx)`` of the study the summary names.

A study with its own analysis (``analyze_tables``) usually has its own sections too; a study without
them adds nothing here. A study declared from a study file (``study: NAME`` plus data files) has a
name of its own; its summary's ``sections_from`` names the registered study whose sections it uses.
"""

from __future__ import annotations

from counterbench.errors import UserError
from counterbench.report.context import ReportContext
from counterbench.report.document import Section


def study_sections(ctx: ReportContext) -> list[Section]:
    """The study's own sections (none when the study is unknown or declares none): the analysed study object
    when the report has it, else the registered study the summary names."""
    study = ctx.data.study
    if study is not None:
        return _sections(study, ctx)
    name = ctx.data.summary.get("sections_from") or ctx.data.summary.get("study")
    if not name:
        return []
    try:
        from counterbench.studies.registry import load_study, registered_studies

        if str(name) not in registered_studies():
            return []
        study = load_study(str(name))
    except UserError:
        return []
    return _sections(study, ctx)


def _sections(study: object, ctx: ReportContext) -> list[Section]:
    from counterbench.studies.hooks import hook

    build = hook(study, "report_sections")
    return list(build(ctx)) if callable(build) else []
