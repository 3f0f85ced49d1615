"""Python API of the report: build it from analysis results and write HTML + Markdown.

The report reads analysis results only (a :class:`ReportInput`: the tables, the summary, a sample of
answers and the run facts as plain data); the pipeline (:mod:`counterbench.pipeline`) reads the store,
analyses it and hands the report that input::

    from counterbench.report import load_analysis_dir, write_report

    files = write_report(load_analysis_dir("analysis/"), "report.html")   # + report.md
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from counterbench.errors import UserError
from counterbench.report.context import ReportContext, ReportInput, build_context, from_analysis, study_names
from counterbench.report.methods import banners, headlines, samples_section
from counterbench.report.provenance import methods_section
from counterbench.report.sections import family_sections
from counterbench.report.sections_answers import answers_section
from counterbench.report.sections_models import model_sections
from counterbench.report.sections_outcomes import has_outcome_tables, outcome_sections
from counterbench.report.sections_probabilities import with_probability_sections
from counterbench.report.sections_registered import registered_sections
from counterbench.report.sections_sequential import sequential_section
from counterbench.report.sections_study import study_sections
from counterbench.report.test_record import RECORD_FILE, full_record, record_json
from counterbench.studies.registry import default_study


@dataclass
class ReportFiles:
    html: Path
    markdown: Path | None
    #: the test record beside the report (``None``: the analysis has none)
    record: Path | None = None


def _subtitle(summary: dict[str, Any], n_models: int) -> str:
    bits = [f"{n_models} model{'s' if n_models != 1 else ''}"]
    profile = summary.get("profile")
    if profile:
        bits.append(f"profile {profile}")
    boot = summary.get("bootstrap")
    reps, seed = (boot.get("replicates"), boot.get("seed")) if isinstance(boot, dict) else (boot, summary.get("seed"))
    if isinstance(reps, int | float) and not isinstance(reps, bool):
        bits.append(f"{int(reps):,} bootstrap replicates")
    if isinstance(seed, int | str) and not isinstance(seed, bool):
        bits.append(f"seed {seed}")
    return " · ".join(bits)


def page_model(data: ReportInput, *, generated_at: dt.datetime | None = None) -> dict[str, Any]:
    """Everything the HTML and Markdown renderers need (sections, banners, headlines, labels)."""
    from counterbench.version import __version__

    ctx = build_context(data)
    when = (generated_at or dt.datetime.now(dt.UTC)).strftime("%Y-%m-%d %H:%M UTC")
    sections, amount = family_sections(ctx)  # the kinds' families' sections (the amount tables'), by the kinds
    own = study_sections(ctx)  # a Python study's own sections
    sections = own + sections
    if has_outcome_tables(data.tables):
        sections = with_probability_sections(ctx, outcome_sections(ctx)) + registered_sections(ctx) + sections
        if not amount:
            from counterbench.report.sections_consistency import parse_section

            sections.append(parse_section(ctx))
    elif own and not amount and "parse_health" in data.tables:
        from counterbench.report.sections_consistency import parse_section

        sections.append(parse_section(ctx))
    board = next((i + 1 for i, s in enumerate(sections) if s.key == "leaderboard"), 0)
    sections[board:board] = model_sections(ctx)  # after the leaderboard, or first
    sequential = sequential_section(ctx)  # --stop-when decided: the audit's conclusions come first
    if sequential is not None:
        sections.insert(0, sequential)
    answers = answers_section(ctx)
    if answers is not None:
        sections.append(answers)
    sample = samples_section(ctx)
    if sample is not None:
        sections.append(sample)
    sections.append(methods_section(ctx, __version__, when))
    title = data.title or report_title(study_title(data.summary))
    return {
        "intro": intro(ctx),
        "title": title,
        "subtitle": _subtitle(data.summary, len(ctx.models)) + f" · written {when}",
        "banners": banners(ctx),
        "headlines": headlines(ctx),
        "models": [{"name": m, "kind": ctx.kinds[m], "kind_label": ctx.kind_label(m)} for m in ctx.models],
        "sections": sections,
        "version": __version__,
        "generated_at": when,
    }


def report_title(study: str) -> str:
    """``<study> audit report``, or the study's title alone when it already says "audit"."""
    return study if re.search(r"\baudit\b", study, re.IGNORECASE) else f"{study} audit report"


def study_title(summary: dict[str, Any]) -> str:
    """The study's own title: from the summary, else the registered study of that name, else its name."""
    if summary.get("title"):
        return str(summary["title"])
    name = str(summary.get("study") or default_study())
    try:
        from counterbench.studies.registry import load_study, registered_studies

        return load_study(name).title if name in registered_studies() else name
    except UserError:
        return name


def intro(ctx: ReportContext) -> str:
    """The overview's first paragraph, in the study's own terms (its axes or crossed attributes)."""
    axes = [str(a) for a in ctx.data.summary.get("axes") or ctx.axes]
    varied = f" ({', '.join(a.lower() if a[:1].isupper() and a[1:].islower() else a for a in axes)})" if axes else ""
    return (f"counterbench sends each model the same request many times, changing only who the request is "
            f"about{varied}, and measures how much the answers differ. If a model ignored identity, every gap "
            "below would sit at the level of its own noise.")


def _as_input(data: Any) -> ReportInput:
    if isinstance(data, ReportInput):
        return data
    if hasattr(data, "tables") and hasattr(data, "summary"):
        return from_analysis(data)
    raise TypeError(f"expected a ReportInput or an AnalysisResult, got {type(data).__name__}")


def render_report(data: ReportInput | Any, *, generated_at: dt.datetime | None = None) -> tuple[str, str]:
    """The report as (HTML, Markdown) strings."""
    from counterbench.report.html import render_html
    from counterbench.report.markdown import render_markdown

    report = _as_input(data)
    with study_names(report.summary):
        page = page_model(report, generated_at=generated_at)
        return render_html(page), render_markdown(page)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _write_text(path: Path, text: str) -> None:
    """Write through a temporary file and a rename; a failure leaves no file behind."""
    if path.is_dir():
        raise UserError(f"cannot write {path}: it is a folder; give a file name, e.g. {path / 'report.html'}")
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except OSError as err:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise UserError(f"cannot write {path}: {err.strerror or err}") from None


def write_report(
    data: ReportInput | Any,
    out: Path | str = "report.html",
    *,
    markdown: Path | str | None = None,
    write_markdown: bool = True,
    samples: pd.DataFrame | None = None,
) -> ReportFiles:
    """Write the HTML report to ``out`` and the Markdown one next to it (``report.md`` by default).

    ``data`` is a :class:`ReportInput` or an ``AnalysisResult``; ``samples`` (raw responses, see
    :func:`~counterbench.report.samples.select_samples`) replaces the input's own sample if given.
    """
    report = _as_input(data)
    if samples is not None:
        report.samples = samples
    html_path = Path(out)
    if html_path.suffix.lower() not in (".html", ".htm"):
        raise UserError(f"--out {html_path}: the report is an HTML file; give a name ending in .html")
    record = full_record(report)
    if record is not None:  # the table in Methods shows the runs the store adds
        report.summary = {**report.summary, "test_record": record}
    html, md = render_report(report)
    _write_text(html_path, html)
    md_path: Path | None = None
    if write_markdown:
        md_path = Path(markdown) if markdown is not None else html_path.with_suffix(".md")
        _write_text(md_path, md)
    record_path: Path | None = None
    if record is not None:
        record_path = html_path.with_name(RECORD_FILE)
        _write_text(record_path, record_json(record))
    return ReportFiles(html_path, md_path, record_path)
