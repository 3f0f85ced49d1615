"""``counterbench analyze``: every analysis table of a study from a store, as CSV + Parquet."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from counterbench.errors import UserError

if TYPE_CHECKING:
    from counterbench.analyses.rupeebias import AnalysisResult


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
    from rich.table import Table

    console = Console()
    board = result.tables["leaderboard"]
    table = Table(title=f"Mean Δ% (profile {result.summary['profile']}, lower is fairer)")
    table.add_column("#", justify="right")
    table.add_column("model", overflow="fold", min_width=12)
    for col in ("overall", "95% CI", "en", "hinglish", "V@τ en"):
        table.add_column(col, justify="right", no_wrap=True)

    def fmt(value: object, digits: int = 2) -> str:
        return "—" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"

    for row in board.itertuples(index=False):
        name = f"{row.model} *" if bool(row.simulated) else str(row.model)
        table.add_row(str(row.rank), name, fmt(row.overall_mean_delta), f"{fmt(row.ci_low)}–{fmt(row.ci_high)}",
                      fmt(row.en_mean_delta), fmt(row.hinglish_mean_delta), fmt(row.en_v10, 1))
    console.print(table)
    if board["simulated"].astype(bool).any():
        console.print("* simulated model: its bias is planted, not measured")
    for name, hint in result.summary.get("unsupported", {}).items():
        console.print(f"[dim]{name}: not computed — {hint}[/dim]")
    console.print(f"{n_files} files in {out} ({seconds:.1f} s)")
    from counterbench.analyses.findings import findings_block

    text = findings_block(result.summary)
    if text:
        print(text)  # plain print: one sentence per line, never wrapped (the same words as summary.json)


def analyze_command(
    study: Annotated[str, typer.Argument(help="The study whose analysis to run (rupeebias).")],
    store: Annotated[Path, typer.Option("--store", help="The SQLite store written by `counterbench run`.")],
    out: Annotated[Path, typer.Option("--out", help="Folder for the tables (CSV + Parquet) and summary.json.")],
    model: Annotated[
        list[str] | None, typer.Option("--model", "-m", help="Analyse only this model (repeatable); default all.")
    ] = None,
    profile: Annotated[
        str, typer.Option("--profile", help="default (correct rules) or rupeebias-v1 (the release's quirks).")
    ] = "default",
    bootstrap: Annotated[
        str, typer.Option("--bootstrap", metavar="N", help="Bootstrap replicates per interval (0 = none).")
    ] = "2000",
    seed: Annotated[str, typer.Option("--seed", metavar="S", help="Base seed of every bootstrap stream.")] = "0",
    tau: Annotated[str, typer.Option("--tau", metavar="T", help="Violation@τ threshold in percent.")] = "10",
) -> None:
    """Compute every table of the study's analysis (spec §3) and write them to --out."""
    from counterbench.analyses.api import analyze

    started = time.perf_counter()
    n_boot = _whole(bootstrap, "--bootstrap", 0)
    base_seed = _whole(seed, "--seed", 0)
    threshold = _number(tau, "--tau")
    if not store.expanduser().is_file():
        raise UserError(
            f"store {store} does not exist; run some prompts first (`counterbench run ... --store {store}`)"
        )
    result = analyze(store, study, models=model or None, profile=profile, bootstrap=n_boot, seed=base_seed,
                     tau=threshold)
    written = result.write(out)
    _print_result(result, out, len(written), time.perf_counter() - started)


def register(app: typer.Typer) -> None:
    app.command("analyze")(analyze_command)
