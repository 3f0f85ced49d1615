"""The notebook-friendly Python API: ``run_prompts`` that works inside a running event loop, and ``audit``.

``counterbench.run_prompts(table, models, temperature=0.2, max_tokens=32)`` takes the generation options
as keywords and works the same in a script and in Jupyter (whose event loop is already running: the
run then happens on a worker thread with its own loop, and the call still returns the summary).
``counterbench.audit(study, models, ...)`` is the CLI's ``audit``: prompts -> run -> analysis -> report,
returning an :class:`Audit` that displays as HTML in a notebook.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from counterbench.run.runner import run_prompts
from counterbench.run.sync import run_sync

if TYPE_CHECKING:

    from counterbench.analyses.result import AnalysisResult
    from counterbench.models.base import Backend
    from counterbench.report.api import ReportFiles
    from counterbench.run.runner import RunSummary

__all__ = ["Audit", "audit", "run_prompts", "run_sync"]

@dataclass
class Audit:
    """What :func:`audit` did: the run summary, the analysis and the report files."""

    run: RunSummary
    analysis: AnalysisResult
    report: ReportFiles

    def _repr_html_(self) -> str:
        return (f"<p>counterbench audit: {self.run.status}; report at <code>{self.report.html}</code></p>"
                + self.analysis._repr_html_())


def audit(
    study: Any,
    models: Sequence[str | Backend],
    *,
    out: Path | str = "counterbench-report",
    store: Path | str = "counterbench.db",
    bootstrap: int = 2000,
    bootstrap_seed: int = 0,
    parse_profile: str = "default",
    tau: float = 10.0,
    title: str | None = None,
    samples: bool = True,
    **options: Any,
) -> Audit:
    """Run ``study`` on ``models``, analyse the answers and write the report, like ``counterbench audit``.

    ``options``: prompt filters (``language=["en"]``, ``preset="quick"``, ``sample_slots=...``) and run
    options (``concurrency``, generation keywords such as ``temperature``). Writes ``OUT/report.html``,
    ``OUT/report.md`` and the tables in ``OUT/analysis``.
    """
    from dataclasses import fields

    from counterbench.errors import UserError
    from counterbench.prompts import PromptFilters, prompts
    from counterbench.report.api import audit_report
    from counterbench.report.context import load_analysis_dir

    filter_names = {f.name for f in fields(PromptFilters)} | {"from_release"}
    filters = {k: options.pop(k) for k in list(options) if k in filter_names}
    out_dir = Path(out)
    if out_dir.exists() and not out_dir.is_dir():
        raise UserError(f"out={out_dir} is a file; give a folder for the report and the analysis tables")
    table = prompts(study, **filters)
    summary = run_prompts(table, models, store=store, parse_profile=parse_profile, **options)
    files = audit_report(Path(store), list(summary.models), table, summary.config_fp, out_dir,
                         parse_profile=parse_profile, bootstrap=bootstrap, seed=bootstrap_seed, tau=tau,
                         samples=samples, title=title, study=study)
    data = load_analysis_dir(out_dir / "analysis")
    from counterbench.analyses.result import AnalysisResult
    from counterbench.studies.registry import load_study

    return Audit(summary, AnalysisResult(data.tables, data.summary, study=load_study(study)), files)
