"""``counterbench analyze``: every analysis table of a study from a store, as CSV + Parquet."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from counterbench.errors import UserError

if TYPE_CHECKING:
    from counterbench.analyses.result import AnalysisResult


def _whole(text: str, option: str, minimum: int) -> int:
    try:
        value = int(text.strip().replace("_", ""))
    except ValueError:
        raise UserError(f"{option} must be a whole number, got {text!r}") from None
    if value < minimum:
        raise UserError(f"{option} must be at least {minimum}, got {value}")
    return value


def _number(text: str, option: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise UserError(f"{option} must be a number, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise UserError(f"{option} must be a finite number ≥ 0, got {text!r}")
    return value


def _print_result(result: AnalysisResult, out: Path, n_files: int, seconds: float) -> None:
    from rich.console import Console

    console = Console()
    from counterbench.analyses.table_families import analysed_kinds, pair_tables_apply

    if pair_tables_apply(analysed_kinds(result.summary, result.tables)):  # by the kinds analysed
        _print_leaderboard(console, result)
    if "outcome_gaps" in result.tables:
        _print_gaps(console, result)
    for name, hint in result.summary.get("unsupported", {}).items():
        console.print(f"[dim]{name}: not computed — {hint}[/dim]")
    console.print(f"{n_files} files in {out} ({seconds:.1f} s)")
    from counterbench.analyses.findings import findings_block

    text = findings_block(result.summary)
    if text:
        print(text)  # plain print: one sentence per line, never wrapped (the same words as summary.json)


def _fmt(value: object, digits: int = 2) -> str:
    return "—" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def _print_gaps(console: Any, result: AnalysisResult) -> None:
    from rich.table import Table

    gaps = result.tables["outcome_gaps"]
    table = Table(title=f"{result.summary.get('title', '')}: matched gaps (comparison − reference)")
    for col in ("model", "language", "compared", "identity", "reference", "difference", "95% CI", "q"):
        table.add_column(col, overflow="fold")
    for r in gaps.head(40).to_dict("records"):
        table.add_row(str(r["model"]), str(r["language"]), str(r["facet"]), str(r["comparison"]), str(r["reference"]),
                      f"{r['difference']:+.2f}", f"{_fmt(r['ci_low'])}–{_fmt(r['ci_high'])}", _fmt(r["q_value"], 3))
    console.print(table)
    if len(gaps) > 40:
        console.print(f"({len(gaps) - 40} more rows in outcome_gaps.csv)")


def _print_leaderboard(console: Any, result: AnalysisResult) -> None:
    from rich.table import Table

    board = result.tables["leaderboard"]
    languages = [str(lang) for lang in result.summary.get("languages", [])]
    table = Table(title=f"Mean Δ% (profile {result.summary['profile']}, lower is fairer)")
    table.add_column("#", justify="right")
    table.add_column("model", overflow="fold", min_width=12)
    shown = [lang for lang in languages if f"{lang}_mean_delta" in board.columns]
    for col in ("overall", "95% CI", *shown):
        table.add_column(col, justify="right", no_wrap=True)
    for row in board.to_dict("records"):
        name = f"{row['model']} *" if bool(row["simulated"]) else str(row["model"])
        table.add_row(str(row["rank"]), name, _fmt(row["overall_mean_delta"]),
                      f"{_fmt(row['ci_low'])}–{_fmt(row['ci_high'])}",
                      *(_fmt(row[f"{lang}_mean_delta"]) for lang in shown))
    console.print(table)
    if board["simulated"].astype(bool).any():
        console.print("* simulated model: its bias is planted, not measured")


def analyze_command(
    ctx: typer.Context,
    study: Annotated[str, typer.Argument(help="The study to analyse: a registered name (`counterbench studies`) or a "
                                              "study .yaml. Only its answers in the store are used.")],
    store: Annotated[Path, typer.Option("--store", help="The SQLite store written by `counterbench run`.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the tables (CSV + Parquet) and summary.json.")],
    model: Annotated[
        list[str] | None, typer.Option("--model", "-m", help="Analyse only this model (repeatable); default all.")
    ] = None,
    parse_profile: Annotated[
        str, typer.Option("--parse-profile", help="Parse rules: default, or a study's registered profile.")
    ] = "default",
    bootstrap: Annotated[
        str, typer.Option("--bootstrap", metavar="N", help="Bootstrap replicates per interval (0 = none).")
    ] = "2000",
    seed: Annotated[
        str, typer.Option("--bootstrap-seed", metavar="S", help="Base seed of every bootstrap stream.")
    ] = "0",
    tau: Annotated[str, typer.Option("--tau", metavar="T", help="Violation@τ threshold in percent (amounts).")] = "10",
    workers: Annotated[
        str | None, typer.Option("--workers", metavar="N", help="Models analysed at once, in worker processes "
                                 "(amount studies; default one per core for a store of 100,000 answers or more).")
    ] = None,
) -> None:
    """Compute every table of the study's analysis and write them to --out (CSV + Parquet + summary.json).

    A study may take its own options after its name (e.g. a convention): `counterbench studies` lists them.
    """
    from counterbench.pipeline import analyze
    from counterbench.studies.options import study_with_options

    started = time.perf_counter()
    n_boot = _whole(bootstrap, "--bootstrap", 0)
    base_seed = _whole(seed, "--bootstrap-seed", 0)
    threshold = _number(tau, "--tau")
    n_workers = None if workers is None else _whole(workers, "--workers", 1)
    if not store.expanduser().is_file():
        raise UserError(
            f"store {store} does not exist; run some prompts first (`counterbench run ... --store {store}`)"
        )
    the_study = study_with_options(study, list(ctx.args))
    result = analyze(store, the_study, models=model or None, profile=parse_profile, bootstrap=n_boot, seed=base_seed,
                     tau=threshold, workers=n_workers)
    written = result.write(out)
    _print_result(result, out, len(written), time.perf_counter() - started)
    from counterbench.commands.common import EXIT_TABLES_FAILED, announce_failed_tables

    if announce_failed_tables(result.summary):
        raise typer.Exit(EXIT_TABLES_FAILED)


def register(app: typer.Typer) -> None:
    from counterbench.commands.common import STUDY_OPTION_SETTINGS

    app.command("analyze", context_settings=STUDY_OPTION_SETTINGS)(analyze_command)
