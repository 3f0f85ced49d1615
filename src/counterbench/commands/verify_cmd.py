"""``counterbench verify``: check a report's test record against a store (exit 1 when they differ)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

EXIT_DIFFERS = 1


def verify_command(
    record: Annotated[Path, typer.Argument(help="The test_record.json written beside a report.")],
    store: Annotated[Path, typer.Option("--store", help="The store the audit's answers are in.")],
    study: Annotated[str | None, typer.Option(
        "--study", help="The study file (or name) the audit ran, when it is not a built-in or registered study.")
    ] = None,
) -> None:
    """Check that a published report came from this store: per model, the answers, prompts and prompt-table
    hash its test record names are recomputed from the store, and the study's definition hash from the study.
    Exit codes: 0 the store matches, 1 it differs (each difference on one line), 2 a mistake."""
    from counterbench.analyses.record_check import check_record, read_record
    from counterbench.errors import UserError
    from counterbench.run.study_results import load_model_results

    if not store.is_file():
        raise UserError(f"store {store} does not exist")
    found = check_record(read_record(record), lambda name, model: load_model_results(store, name, model, "default"),
                         study=study)
    for line in found.checked:
        print(f"ok: {line}")
    for line in found.notes:
        print(f"not checked: {line}")
    for line in found.differences:
        print(f"DIFFERS: {line}")
    if found.matches:
        print(f"The test record {record} matches store {store}.")
        return
    print(f"The test record {record} does not match store {store}: {len(found.differences)} difference(s).")
    raise typer.Exit(EXIT_DIFFERS)


def register(app: typer.Typer) -> None:
    app.command("verify")(verify_command)
