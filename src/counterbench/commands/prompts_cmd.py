"""``counterbench prompts`` and ``counterbench studies``."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from counterbench.commands.common import STUDY_OPTION_SETTINGS, FromReleaseOpt, with_prompt_filters
from counterbench.errors import UserError

if TYPE_CHECKING:
    from counterbench.prompts import PromptFilters


@with_prompt_filters
def prompts_command(
    ctx: typer.Context,
    study: Annotated[str, typer.Argument(help="A built-in study (see `counterbench studies`) or a study .yaml.")],
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write the table to .parquet, .csv or .jsonl.")
    ] = None,
    *,
    filters: PromptFilters,
    from_release: FromReleaseOpt = None,
) -> None:
    """Expand a study into its prompt table and print a summary (prompts per use case and language).

    A study may take its own options after its name (e.g. `--jobs FILE`): `counterbench studies`
    lists them.
    """
    from rich.console import Console

    from counterbench.prompts import build_prompts
    from counterbench.report.console import print_prompt_summary
    from counterbench.table_files import write_table

    started = time.perf_counter()
    from counterbench.studies.options import study_with_options

    table = build_prompts(study_with_options(study, list(ctx.args)), filters, from_release=from_release)
    if out is not None:
        write_table(table, out)
    console = Console()
    print_prompt_summary(console, table)
    where = f" -> {out}" if out is not None else " (use --out FILE to save)"
    console.print(f"{len(table):,} prompts in {time.perf_counter() - started:.2f} s{where}")


def studies_command() -> None:
    """List the registered studies (built-in, and those installed packages add through the entry-point group
    counterbench.studies) with their outcome kinds and sizes, and each study's own options. Any study .yaml can be
    given by path instead."""
    from rich.console import Console
    from rich.table import Table

    from counterbench.studies.counts import prompt_counts
    from counterbench.studies.options import declared_options
    from counterbench.studies.registry import load_study, registered_studies

    options: dict[str, list[str]] = {}
    table = Table(title="Studies (or give a path to a study .yaml)")
    for col in ("study", "title", "outcomes", "use cases", "languages", "axes", "identifiers", "prompts", "source"):
        table.add_column(col, overflow="fold")
    for name, entry in registered_studies().items():
        study = None
        try:
            study = load_study(name)
            declared = declared_options(study)
            if declared is not None:  # listed even when the study needs one of them to expand (its data)
                options[name] = declared.describe()
            counts = prompt_counts(study)  # counted from the study's design where it can, not from its prompts
        except UserError as err:
            # a study that loads but needs one of its options (its data) for prompts: its title and what to give
            said = f"(cannot be loaded: {err})" if study is None else f"{study.title} ({err})"
            table.add_row(name, said, *[""] * 6, entry.source)
            continue
        table.add_row(
            name,
            study.title,
            ", ".join(dict.fromkeys(spec.kind for spec in study.outcomes.values())),
            str(len(counts.use_cases)),
            ", ".join(study.languages),
            str(len(study.axes)),
            str(len(counts.identifiers)),
            f"{counts.prompts:,}",
            entry.source,
        )
    console = Console(width=160)
    console.print(table)
    for name, lines in options.items():
        console.print(f"\nOptions of {name} (after its name: `counterbench audit {name} --OPTION VALUE`; the same "
                      f"names in a study file with `study: {name}`):", markup=False, highlight=False)
        for line in lines:
            console.print(f"  {line}", markup=False, highlight=False)


def register(app: typer.Typer) -> None:
    app.command("prompts", context_settings=STUDY_OPTION_SETTINGS)(prompts_command)
    app.command("studies")(studies_command)
