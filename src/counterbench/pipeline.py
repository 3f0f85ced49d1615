"""The notebook-friendly Python API: ``run_prompts`` that works inside a running event loop, and ``audit``.

``counterbench.run_prompts(table, models, temperature=0.2, max_tokens=32)`` takes the generation options
as keywords and works the same in a script and in Jupyter (whose event loop is already running: the
run then happens on a worker thread with its own loop, and the call still returns the summary).
Both take their run options as one :class:`~counterbench.options.RunOptions` or as keywords.
``counterbench.audit(study, models, ...)`` is the CLI's ``audit``: prompts -> run -> analysis -> report,
returning an :class:`Audit` that displays as HTML in a notebook. ``counterbench.analyze(store, study)``
reads the study's answers from the store and hands the analyses their frames.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from counterbench.options import GenerationOptions, RunOptions
from counterbench.run.runner import run_prompts
from counterbench.run.sync import run_sync

if TYPE_CHECKING:
    import pandas as pd

    from counterbench.analyses.result import AnalysisResult
    from counterbench.models.base import Backend
    from counterbench.report.api import ReportFiles
    from counterbench.run.runner import RunSummary

__all__ = ["Audit", "GenerationOptions", "RunOptions", "analyze", "audit", "run_prompts", "run_sync"]

@dataclass
class Audit:
    """What :func:`audit` did: the run summary, the analysis and the report files."""

    run: RunSummary
    analysis: AnalysisResult
    report: ReportFiles

    def _repr_html_(self) -> str:
        """The analysis's notebook view (findings, compact leaderboard, tables folded), with the run's status
        and where the report is after the leaderboard."""
        return self.analysis.html_view([f"counterbench audit: {self.run.status}; report at {self.report.html}"])


def audit(
    study: Any,
    models: Sequence[str | Backend],
    options: RunOptions | None = None,
    *,
    out: Path | str = "counterbench-report",
    bootstrap: int = 2000,
    bootstrap_seed: int = 0,
    tau: float = 10.0,
    title: str | None = None,
    samples: bool = True,
    **keywords: Any,
) -> Audit:
    """Run ``study`` on ``models``, analyse the answers and write the report, like ``counterbench audit``.

    ``options`` (:class:`~counterbench.options.RunOptions`) says how prompts are sent, exactly as for
    :func:`run_prompts`; ``keywords`` are prompt filters (``language=["en"]``, ``preset="quick"``,
    ``sample_slots=...``, ``seed`` for the sample) and run options replacing fields of ``options``
    (``store``, ``concurrency``, ``parse_profile``, generation keywords such as ``temperature``;
    ``generation_seed`` is the seed sent to the model). Writes ``OUT/report.html``, ``OUT/report.md``
    and the tables in ``OUT/analysis``.
    """
    from dataclasses import fields

    from counterbench.errors import UserError
    from counterbench.prompts import PromptFilters, prompts
    from counterbench.report.api import audit_report
    from counterbench.report.context import load_analysis_dir

    filter_names = {f.name for f in fields(PromptFilters)} | {"from_release"}
    filters = {k: keywords.pop(k) for k in list(keywords) if k in filter_names}
    run = RunOptions.from_keywords(options, **keywords)
    out_dir = Path(out)
    if out_dir.exists() and not out_dir.is_dir():
        raise UserError(f"out={out_dir} is a file; give a folder for the report and the analysis tables")
    table = prompts(study, **filters)
    summary = run_prompts(table, models, run)
    files = audit_report(Path(run.store), list(summary.models), table, summary.config_fp, out_dir,
                         parse_profile=run.parse_profile, bootstrap=bootstrap, seed=bootstrap_seed, tau=tau,
                         samples=samples, title=title, study=study)
    data = load_analysis_dir(out_dir / "analysis")
    from counterbench.analyses.result import AnalysisResult
    from counterbench.studies.registry import load_study

    return Audit(summary, AnalysisResult(data.tables, data.summary, study=load_study(study)), files)


def analyze(
    source: pd.DataFrame | str | Path,
    study: Any = None,
    *,
    models: Sequence[str] | None = None,
    profile: str = "default",
    **options: Any,
) -> AnalysisResult:
    """Analyse stored responses of ``study`` (a registered name, a study file or a study object): the
    Python API's ``counterbench.analyze``; the store is read here, the analyses take frames.

    ``source``: a results DataFrame or a store path (re-parsed in memory under ``profile``'s parser).
    ``models``: keep only these model strings. ``options`` of
    :func:`~counterbench.analyses.study.analyze_study`: ``bootstrap`` (replicates per interval, 2000),
    ``seed`` (the base seed of every bootstrap stream, 0), ``tau`` (the Violation@τ threshold of amount
    outcomes, 10), ``canonical_pairs`` (default the study's). An amount study's store is read one model
    at a time.
    """
    from counterbench.analyses.study import analyze_study, analyze_study_by_model, only_amounts, resolve_study
    from counterbench.run import study_results as read

    the_study = resolve_study(study)
    options["profile"] = profile
    if not isinstance(source, str | Path):
        return analyze_study(source, the_study, models=models, **options)
    wanted = list(dict.fromkeys(models)) if models else None
    if only_amounts(the_study):  # bounded memory: one model's answers at a time
        from counterbench.analyses.profiles import get_profile

        get_profile(profile)
        names = wanted or read.study_models(source, the_study.name)
        return analyze_study_by_model(lambda model: read.load_model_results(source, the_study.name, model, profile),
                                      names, the_study, **options)
    results = read.load_study_results(source, the_study.name, models=wanted, profile=profile)
    return analyze_study(results, the_study, **options)
