"""``counterbench report`` (analysis → HTML + Markdown) and ``counterbench audit`` (run + analyze + report)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from counterbench.commands.check_cmd import FailOnOpt, JunitOpt, gate_after_audit
from counterbench.commands.common import (
    EXIT_TABLES_FAILED,
    STUDY_OPTION_SETTINGS,
    FromReleaseOpt,
    announce_failed_tables,
    with_prompt_filters,
)
from counterbench.commands.run_options import (
    EXIT_INTERRUPTED,
    EXIT_MAX_COST,
    ModelOpt,
    send,
    with_run_options,
)
from counterbench.commands.stopping_options import with_stopping_rule
from counterbench.errors import UserError
from counterbench.options import RunOptions, StoppingRule
from counterbench.report.links import viewer_command

if TYPE_CHECKING:
    import pandas as pd

    from counterbench.prompts import PromptFilters
    from counterbench.report.context import ReportInput


BootstrapOpt = Annotated[int | None, typer.Option("--bootstrap", help="Bootstrap replicates per interval (2000).")]
TauOpt = Annotated[float | None, typer.Option("--tau", help="Violation threshold in percent (10).")]
SamplesOpt = Annotated[bool, typer.Option("--samples/--no-samples", help="Show a few raw responses (escaped).")]
TitleOpt = Annotated[str | None, typer.Option("--title", help="The report's title.")]
MarkdownOpt = Annotated[
    Path | None, typer.Option("--markdown", help="Where to write the Markdown twin (default: next to the HTML).")
]


def _announce(html: Path, extra: list[str]) -> None:
    for line in extra:
        print(line)
    print("Open the report in a browser:")
    print(html.resolve())


def _findings_lines(summary_file: Path) -> list[str]:
    """The analysis's findings in plain words (as at the top of the report), printed just before the
    report's path (which stays the last line)."""
    import json

    from counterbench.analyses.findings import findings_block

    try:
        text = findings_block(json.loads(summary_file.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return []
    return text.splitlines()


def report_command(
    ctx: typer.Context,
    study: Annotated[str | None, typer.Argument(
        help="With --store: the study to report (a registered name or a study .yaml); default: the store's only study.",
    )] = None,
    analysis: Annotated[
        Path | None, typer.Option("--analysis", help="A folder written by `counterbench analyze ... --out DIR`.")
    ] = None,
    store: Annotated[
        Path | None,
        typer.Option("--store", help="Analyse this store on the fly; with --analysis, only for sample responses."),
    ] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="The HTML file to write.")] = Path("report.html"),
    markdown: MarkdownOpt = None,
    model: ModelOpt = None,
    profile: Annotated[
        str | None, typer.Option("--parse-profile", help="Parse rules with --store: default or a registered profile.")
    ] = None,
    bootstrap: BootstrapOpt = None,
    seed: Annotated[
        int | None, typer.Option("--bootstrap-seed", help="Base seed of every bootstrap stream (0).")
    ] = None,
    tau: TauOpt = None,
    samples: SamplesOpt = True,
    title: TitleOpt = None,
) -> None:
    """Write one self-contained HTML report (works offline) and a Markdown twin.

    From a folder written by `counterbench analyze` (--analysis DIR) or from a store analysed now (--store PATH);
    a study's own options (`counterbench studies` lists them) follow its name, with --store.
    """
    from counterbench.pipeline import analyze_store, generation_settings
    from counterbench.report.api import write_report
    from counterbench.report.context import load_analysis_dir

    args = list(ctx.args)
    if study is not None and study.startswith("--"):  # a study option where the (optional) study name would be
        args, study = [study, *args], None
    if analysis is None:
        if store is None:
            raise UserError("give --analysis DIR (written by `counterbench analyze`) or --store PATH (analysed now)")
        from counterbench.studies.options import study_with_options

        the_study = study_with_options(study or _only_study(store), args)
        data = analyze_store(store, the_study, models=model, profile=profile, bootstrap=bootstrap,
                             seed=seed, tau=tau, with_samples=samples)
    else:
        if args:
            raise UserError(f"{args[0]} applies when analysing a store; the --analysis folder is analysed already")
        given = [name for name, v in (("--parse-profile", profile), ("--bootstrap", bootstrap),
                                      ("--bootstrap-seed", seed), ("--tau", tau), ("--model", model)) if v]
        if given:
            raise UserError(f"{given[0]} applies when analysing a store; the --analysis folder is analysed already")
        data = load_analysis_dir(analysis)
        if study is not None and str(data.summary.get("study")) not in (study, Path(study).with_suffix("").name):
            raise UserError(f"the --analysis folder holds study {data.summary.get('study')}, not {study}")
        if store is not None:
            results = _load_store(store, _models_of(data), data.summary.get("profile"))
            data.model_settings = generation_settings(results)
            if samples:
                from counterbench.report.samples import select_samples

                data.samples = select_samples(results)
    data.title = title
    files = write_report(data, out, markdown=markdown)
    _announce(files.html, ([f"Markdown: {files.markdown}"] if files.markdown else [])
              + [f"Browse the answers behind the tables: {viewer_command(str(store) if store else None)}"])
    if announce_failed_tables(data.summary):
        raise typer.Exit(EXIT_TABLES_FAILED)


def _only_study(store: Path) -> str:
    """The store's one study (an error naming them when it holds several)."""
    import sqlite3
    from contextlib import closing

    if not store.is_file():
        raise UserError(f"store {store} does not exist; create it with `counterbench run` or `counterbench audit`")
    try:
        with closing(sqlite3.connect(f"file:{store}?mode=ro", uri=True)) as conn:  # `with conn` alone never closes
            names = [str(r[0]) for r in conn.execute("SELECT DISTINCT study FROM prompts WHERE study IS NOT NULL")]
    except sqlite3.Error as err:
        raise UserError(f"cannot read store {store}: {err}") from None
    if len(names) == 1:
        from counterbench.studies.registry import registered_studies

        if names[0] in registered_studies():
            return names[0]
        raise UserError(f"store {store} holds study {names[0]}; give its study file: "
                        f"`counterbench report PATH/{names[0]}.yaml --store {store}`")
    if not names:
        from counterbench.studies.registry import default_study

        return default_study()
    raise UserError(f"store {store} holds several studies ({', '.join(sorted(names))}); name the one to report "
                    f"(a registered study or its .yaml), e.g. `counterbench report STUDY --store {store}`")


def _models_of(data: ReportInput) -> list[str] | None:
    from counterbench.report.context import build_context

    return build_context(data).models or None


def _load_store(store: Path, models: list[str] | None, profile: Any) -> pd.DataFrame:
    from counterbench.run.results import load_results

    if not store.is_file():
        raise UserError(f"store {store} does not exist")
    return load_results(store, models=models, profile=str(profile) if profile else None)


@with_stopping_rule
@with_run_options
@with_prompt_filters
def audit_command(
    ctx: typer.Context,
    study: Annotated[str, typer.Argument(help="A registered study (`counterbench studies`) or a study .yaml.")],
    model: ModelOpt = None,
    *,
    filters: PromptFilters,
    from_release: FromReleaseOpt = None,
    run_options: RunOptions,
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Folder for report.html, report.md and the analysis tables.")
    ] = Path("counterbench-report"),
    bootstrap: Annotated[int, typer.Option("--bootstrap", help="Bootstrap replicates per interval.")] = 2000,
    bootstrap_seed: Annotated[
        int, typer.Option("--bootstrap-seed", help="Base seed of every bootstrap stream.")
    ] = 0,
    tau: Annotated[float, typer.Option("--tau", help="Violation threshold in percent.")] = 10.0,
    samples: SamplesOpt = True,
    title: TitleOpt = None,
    fail_on: FailOnOpt = None,
    junit: JunitOpt = None,
    stopping: StoppingRule | None = None,
) -> None:
    """Run a study on models, analyse the answers and write the report, in one go; rerun to resume.

    A study may take its own options after its name (e.g. `--jobs FILE`): `counterbench studies`
    lists them.

    Writes OUT/report.html, OUT/report.md and the analysis tables (CSV + Parquet) in OUT/analysis.

    Exit codes: 0 done, 1 a --fail-on threshold was crossed (see `counterbench check`) or a table failed
    to compute (named; everything else written), 2 a mistake,
    3 stopped at --max-cost (reported so far), 130 interrupted (rerun).
    """
    from counterbench.prompts import build_prompts
    from counterbench.run.summary import format_summary

    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file; give a folder for the report and the analysis tables")
    if fail_on:
        from counterbench.gate import parse_fail_on

        parse_fail_on(fail_on)  # a bad threshold is refused before the audit sends anything
    from counterbench.studies.options import study_with_options

    the_study = study_with_options(study, list(ctx.args))
    table = build_prompts(the_study, filters, from_release=from_release)
    sequential = None
    if stopping is not None:
        from counterbench.sequential import run_until_decided, sequential_summary

        sequential = run_until_decided(the_study, table, list(model or []), run_options, stopping, say=print)
        summary = sequential.summary
    else:
        summary = send(table, list(model or []), run_options)
    store, parse_profile = Path(run_options.store), run_options.parse_profile
    print(format_summary(summary))
    if sequential is not None:
        print("\n".join(sequential_summary(sequential)))
    if summary.status == "interrupted":
        print(f"Interrupted; everything answered so far is saved. Resume (and get the report) with:\n"
              f"  {summary.resume_command}")
        raise typer.Exit(EXIT_INTERRUPTED)
    from counterbench.pipeline import audit_report

    files = audit_report(
        store, list(summary.models), table, summary.config_fps, out, parse_profile=parse_profile,
        bootstrap=bootstrap, seed=bootstrap_seed, tau=tau, samples=samples, title=title, study=the_study,
        sequential=sequential,
    )
    lines = [f"Analysis tables: {out / 'analysis'}", f"Markdown: {files.markdown}",
             f"Browse the answers behind the tables: {viewer_command(str(store))}"]
    if summary.status == "max_cost":
        lines.insert(0, f"Stopped at --max-cost {run_options.max_cost:g} USD: the report covers the answers so far. "
                        f"Raise it and rerun to continue:\n  {summary.resume_command}")
    lines += _findings_lines(out / "analysis" / "summary.json")
    _announce(files.html, lines)
    import json

    failed = announce_failed_tables(json.loads((out / "analysis" / "summary.json").read_text(encoding="utf-8")))
    gate_after_audit(out / "analysis", fail_on, junit)
    if summary.status == "max_cost":
        raise typer.Exit(EXIT_MAX_COST)
    if failed:
        raise typer.Exit(EXIT_TABLES_FAILED)


def register(app: typer.Typer) -> None:
    app.command("report", context_settings=STUDY_OPTION_SETTINGS)(report_command)
    app.command("audit", context_settings=STUDY_OPTION_SETTINGS)(audit_command)
