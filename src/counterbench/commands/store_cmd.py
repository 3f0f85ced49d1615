"""``counterbench export`` and ``counterbench parse``: read the store back, re-parse without a model."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

StoreOpt = Annotated[Path, typer.Option("--store", help="The SQLite store written by `counterbench run`.")]
ModelsOpt = Annotated[list[str] | None, typer.Option("--model", "-m", help="Only this model (repeatable).")]


def export_command(
    out: Annotated[Path, typer.Option("--out", "-o", help="Output file: .parquet, .csv or .jsonl.")],
    store: StoreOpt = Path("counterbench.db"),
    model: ModelsOpt = None,
    profile: Annotated[
        str | None,
        typer.Option("--parse-profile", help="Re-parse in the export with these parse rules (default or a profile)."),
    ] = None,
    with_prompts: Annotated[
        bool, typer.Option("--with-prompts", help="Also write each prompt's system and user text.")
    ] = False,
) -> None:
    """Write one row per stored response, with the prompt's design columns, to a table file."""
    from counterbench.run.results import export_results

    path, rows = export_results(store, out, models=model or None, profile=profile, include_prompt_text=with_prompts)
    print(f"{rows:,} responses -> {path}")


def parse_command(
    store: StoreOpt = Path("counterbench.db"),
    profile: Annotated[str, typer.Option("--parse-profile", help="Parse rules: default or a profile.")] = "default",
    model: ModelsOpt = None,
) -> None:
    """Re-parse every stored answer (no model is called) and save the new values in the store."""
    from counterbench.run.results import reparse_store

    counts = reparse_store(store, profile, models=model or None)
    total = sum(counts.values())
    print(f"re-parsed {total - counts.get('error', 0):,} responses in {store} with profile {profile}: "
          + ", ".join(f"{k} {v:,}" for k, v in sorted(counts.items())))


def register(app: typer.Typer) -> None:
    app.command("export")(export_command)
    app.command("parse")(parse_command)
