"""The notebook-friendly Python API: ``run_prompts`` that works inside a running event loop, and ``audit``.

``counterbench.run_prompts(table, models, temperature=0.2, max_tokens=32)`` takes the generation options
as keywords and works the same in a script and in Jupyter (whose event loop is already running: the
run then happens on a worker thread with its own loop, and the call still returns the summary).
Both take their run options as one :class:`~counterbench.options.RunOptions` or as keywords.
``counterbench.audit(study, models, ...)`` is the CLI's ``audit``: prompts -> run -> analysis -> report,
returning an :class:`Audit` that displays as HTML in a notebook. ``counterbench.analyze(store, study)``
reads the study's answers from the store and hands the analyses their frames.

This module is the one store -> analysis -> report path: :func:`analyze_store` and :func:`audit_report`
read the store, analyse the answers and hand the report analysis results only (the tables, a sample of
answers and the generation settings as plain data, a :class:`~counterbench.report.context.ReportInput`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
    from counterbench.report.context import ReportInput
    from counterbench.run.summary import RunSummary
    from counterbench.sequential import SequentialRun

__all__ = ["Audit", "GenerationOptions", "RunOptions", "analyze", "analyze_store", "audit", "audit_report",
           "generation_settings", "import_runs", "run_prompts", "run_sync"]


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
    stop_when: str | None = None,
    margin: float | Mapping[str, float] | None = None,
    look_every: int = 100,
    order_seed: int = 0,
    **keywords: Any,
) -> Audit:
    """Run ``study`` on ``models``, analyse the answers and write the report, like ``counterbench audit``.

    ``options`` (:class:`~counterbench.options.RunOptions`) says how prompts are sent, exactly as for
    :func:`run_prompts`; ``keywords`` are prompt filters (``language=["en"]``, ``preset="quick"``,
    ``sample_slots=...``, ``seed`` for the sample) and run options replacing fields of ``options``
    (``store``, ``concurrency``, ``parse_profile``, generation keywords such as ``temperature``;
    ``generation_seed`` is the seed sent to the model). Writes ``OUT/report.html``, ``OUT/report.md``
    and the tables in ``OUT/analysis``. ``stop_when="decided"`` runs the sequential audit
    (:mod:`counterbench.sequential`): ``margin`` (one number, or outcome kind -> number), ``look_every`` prompts
    per round, ``order_seed`` for the order of the slots.
    """
    from dataclasses import fields

    from counterbench.errors import UserError
    from counterbench.prompts import PromptFilters, prompts
    from counterbench.report.context import load_analysis_dir

    filter_names = {f.name for f in fields(PromptFilters)} | {"from_release"}
    filters = {k: keywords.pop(k) for k in list(keywords) if k in filter_names}
    run = RunOptions.from_keywords(options, **keywords)
    out_dir = Path(out)
    if out_dir.exists() and not out_dir.is_dir():
        raise UserError(f"out={out_dir} is a file; give a folder for the report and the analysis tables")
    table = prompts(study, **filters)
    sequential = None
    if stop_when is not None:
        from counterbench.options import StoppingRule
        from counterbench.sequential import run_until_decided

        if stop_when != "decided":
            raise UserError(f"stop_when takes 'decided', got {stop_when!r}")
        margins = ({"*": float(margin)} if isinstance(margin, int | float) else dict(margin or {}))
        sequential = run_until_decided(study, table, models, run, StoppingRule(
            margins=margins, look_every=look_every, seed=order_seed))
        summary = sequential.summary
    else:
        summary = run_prompts(table, models, run)
    files = audit_report(Path(run.store), list(summary.models), table, summary.config_fps, out_dir,
                         parse_profile=run.parse_profile, bootstrap=bootstrap, seed=bootstrap_seed, tau=tau,
                         samples=samples, title=title, study=study, sequential=sequential)
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
    outcomes, 10), ``canonical_pairs`` (default the study's), ``workers`` (models analysed at once, in
    worker processes; default one per core for a store of 100,000 answers or more, else 1). An amount
    study's store is read one model at a time.
    """
    from counterbench.analyses.model_workers import auto_workers, checked_workers
    from counterbench.analyses.study import analyze_study, analyze_study_by_model, only_amounts, resolve_study
    from counterbench.run import study_results as read

    the_study = resolve_study(study)
    options["profile"] = profile
    workers = checked_workers(options.pop("workers", None))
    if not isinstance(source, str | Path):
        return analyze_study(source, the_study, models=models, **options)
    wanted = list(dict.fromkeys(models)) if models else None
    if only_amounts(the_study):  # bounded memory: one model's answers at a time (several at once with workers)
        from counterbench.analyses.profiles import get_profile

        get_profile(profile)
        names = wanted or read.study_models(source, the_study.name)
        with read.model_results_reader(source, the_study.name, profile) as load:
            if workers is None:  # (one model: nothing to count)
                workers = 1 if len(names) < 2 else auto_workers(read.count_answers(source), len(names))
            return analyze_study_by_model(load, names, the_study, workers=workers, **options)
    results = read.load_study_results(source, the_study.name, models=wanted, profile=profile)
    return analyze_study(results, the_study, **options)


def analyze_store(
    store: Path | str,
    study: Any = None,
    *,
    models: Sequence[str] | None = None,
    profile: str | None = None,
    bootstrap: int | None = None,
    seed: int | None = None,
    tau: float | None = None,
    with_samples: bool = True,
) -> ReportInput:
    """Read a store, analyse ``study``'s answers in it, and pick a sample of raw responses: a report input."""
    from counterbench.analyses.study import analyze_study, resolve_study
    from counterbench.errors import UserError
    from counterbench.report.context import from_analysis
    from counterbench.report.samples import select_samples
    from counterbench.run.study_results import load_study_results

    if not Path(store).is_file():
        raise UserError(f"store {store} does not exist; create it with `counterbench run` or `counterbench audit`")
    the_study = resolve_study(study)
    results = load_study_results(store, the_study.name, models=models, profile=profile or "default")
    options: dict[str, Any] = {k: v for k, v in (("profile", profile), ("bootstrap", bootstrap), ("seed", seed),
                                                  ("tau", tau)) if v is not None}
    result = analyze_study(results, the_study, **options)
    if "run_id" in results.columns:  # answers of a sequential audit: the report says where its verdicts are
        from counterbench.run.run_records import stopping_rules

        if stopping_rules(store, results["run_id"].dropna().astype(int).unique().tolist()):
            result.summary["sequential_store"] = True
    report = from_analysis(result, samples=select_samples(results) if with_samples else None, source=str(store))
    report.model_settings = generation_settings(results)
    return report


#: generation options that are whole numbers (shown as such even when the column holds floats)
_INTEGER_SETTINGS = ("max_tokens", "seed")


def generation_settings(results: pd.DataFrame) -> dict[str, str]:
    """Per model, its generation config(s) in words, from a results table's config columns."""
    names = {"temperature": "temperature", "max_tokens": "max tokens", "seed": "seed",
             "reasoning_effort": "reasoning effort", "structured": "structured output"}
    cols = [c for c in names if c in results.columns]
    if not cols or "model" not in results.columns:
        return {}
    out: dict[str, str] = {}
    configs = results[["model", *cols]].astype(object).drop_duplicates()
    for model, part in configs.groupby("model", sort=False):
        described = []
        for record in part.to_dict("records"):
            bits = []
            for c in cols:
                value = record[c]
                if value is None or (isinstance(value, float) and value != value):
                    continue
                if c == "structured":
                    value = "on" if value else "off"
                elif c in _INTEGER_SETTINGS and isinstance(value, float) and value.is_integer():
                    value = int(value)  # a column with a missing value reads as floats: 64, not 64.0
                bits.append(f"{names[c]} {value}")
            described.append(", ".join(bits))
        out[str(model)] = " | ".join(described)
    if "repeat" in results.columns:  # --repeats: how many times each prompt was asked
        counts = results.groupby("model", sort=False)["repeat"].nunique()
        for label, repeats in zip(counts.index.astype(str), counts.to_numpy(), strict=True):
            if repeats > 1 and label in out:
                out[label] += f", {int(repeats)} repeats per prompt (averaged first)"
    return out


def audit_report(
    store: Path,
    models: list[str],
    prompts: pd.DataFrame,
    config_fp: str | Sequence[str],
    out: Path,
    *,
    parse_profile: str,
    bootstrap: int,
    seed: int,
    tau: float,
    samples: bool,
    title: str | None,
    study: Any = None,
    canonical_pairs: Mapping[str, tuple[str, str]] | None = None,
    sequential: SequentialRun | None = None,
) -> ReportFiles:
    """Analyse exactly this audit's answers (its study, prompts, models and generation config) and report;
    ``sequential`` (``--stop-when decided``): its verdicts join the analysis (``sequential_verdicts``)."""
    from counterbench.analyses.study import analyze_study, resolve_study
    from counterbench.errors import UserError
    from counterbench.report.api import write_report
    from counterbench.report.context import from_analysis
    from counterbench.report.samples import select_samples
    from counterbench.run.study_results import load_study_results

    the_study = resolve_study(study)
    results = load_study_results(store, the_study.name, models=models, profile=parse_profile)
    fps = [config_fp] if isinstance(config_fp, str) else list(config_fp)  # one per repeat (--repeats)
    results = results[results["prompt_id"].isin(set(prompts["prompt_id"])) & results["config_fp"].isin(fps)]
    if results.empty:
        raise UserError(f"no answers of this audit in {store} yet; rerun the command to send the prompts")
    result = analyze_study(results.reset_index(drop=True), the_study, profile=parse_profile, bootstrap=bootstrap,
                           seed=seed, tau=tau, canonical_pairs=canonical_pairs)
    if sequential is not None:
        from counterbench.sequential import add_to_analysis

        add_to_analysis(result, sequential)
    try:
        result.write(out / "analysis")
    except OSError as err:
        raise UserError(f"cannot write the analysis tables to {out / 'analysis'}: {err.strerror or err}") from None
    data = from_analysis(result, samples=select_samples(results) if samples else None, title=title,
                         source=str(store))
    data.model_settings = generation_settings(results)
    return write_report(data, out / "report.html")


def import_runs(paths: Sequence[Path | str], store: Path | str, *, study: str | None = None,
                profile: str = "default", command: str | None = None, same_model: bool = False) -> list[str]:
    """``counterbench import``: load run files into ``store``; returns what was read and stored, as lines.

    A run's recovery files (``<store>.unsaved-....jsonl``, :mod:`counterbench.run.rescue`) are stored
    as a run stores its answers (label-identity check unless ``same_model``, keys redacted), whatever the
    study; the other paths go to ``study``'s registered run-file importer (the default study's when none
    is named).
    """
    from counterbench.errors import UserError
    from counterbench.run.importers import RUN_IMPORTERS
    from counterbench.run.rescue import import_rescue_files, is_rescue_file
    from counterbench.studies.registry import default_study

    rescued = [Path(p) for p in paths if is_rescue_file(Path(p))]
    others = [p for p in paths if not is_rescue_file(Path(p))]
    lines: list[str] = []
    if rescued:
        done = import_rescue_files(rescued, store, same_model=same_model, command=command or "")
        lines += done.summary_lines(rescued)
    if others:
        name = study or default_study()
        if name not in RUN_IMPORTERS:
            known = ", ".join(RUN_IMPORTERS.names()) or "none"
            raise UserError(f"study {name} has no importer of run files (studies with one: {known})")
        lines += RUN_IMPORTERS.get(name)(others, store, profile=profile, command=command).lines()
    return lines
