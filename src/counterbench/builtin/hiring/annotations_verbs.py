"""``counterbench hiring annotations export|import``: human validation of the hiring study's marker baskets."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from counterbench.errors import UserError

annotations_app = typer.Typer(name="annotations", no_args_is_help=True,
                              help="Human validation of the marker baskets: an annotation sheet (CSV) and the "
                                   "import of the answers with Krippendorff's alpha (see docs/hiring.md).")
SHEET, KEY = "annotation_sheet.csv", "annotation_key.csv"


@annotations_app.command("export")
def export_command(
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for annotation_sheet.csv and annotation_key.csv.")],
    baskets: Annotated[
        Path | None, typer.Option("--baskets", help="Marker baskets (YAML or JSONL); default: built-in.")
    ] = None,
    resumes: Annotated[
        Path | None, typer.Option("--resumes", help="Resume templates (JSONL) the markers are shown in; default: "
                                                    "built-in.")
    ] = None,
    progressive: Annotated[
        bool, typer.Option("--progressive/--all-markers",
                           help="Reveal the markers in five steps (the paper's protocol) or show all at once.")
    ] = True,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the item order and the revealing order.")] = 0,
) -> None:
    """Write an annotation sheet for annotators and its key (keep the key away from them)."""
    from counterbench.builtin.hiring.annotation import annotation_sheet
    from counterbench.builtin.hiring.data import load_baskets, load_resumes
    from counterbench.table_files import write_table

    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file; give a folder for the sheet and its key")
    sheet, key = annotation_sheet(load_baskets(baskets), load_resumes(resumes), progressive=progressive, seed=seed)
    out.mkdir(parents=True, exist_ok=True)
    write_table(sheet, out / SHEET, quote_text=True)
    write_table(key, out / KEY, quote_text=True)
    print(f"{sheet['item_id'].nunique()} items, {len(sheet)} rows: {out / SHEET} (for annotators: fill annotator, "
          f"realistic yes/no, gender, ethnicity) and {out / KEY} (the truth; do not share)")


@annotations_app.command("import")
def import_command(
    sheets: Annotated[list[Path], typer.Argument(help="Filled annotation sheets (CSV), one or more.")],
    key: Annotated[Path, typer.Option("--key", help="The annotation_key.csv written with the sheet.")],
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Folder for the result tables (CSV); default: print only.")
    ] = None,
) -> None:
    """Recoverability (macro-F1) and agreement (Krippendorff's alpha) of the annotators' answers."""
    from counterbench.builtin.hiring.annotation import annotation_tables, read_annotations
    from counterbench.table_files import write_table

    if out is not None and out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file; give a folder for the result tables")
    tables = annotation_tables(read_annotations(sheets, key))
    for name, table in tables.items():
        print(f"{name}:\n{table.to_string(index=False, float_format=lambda v: f'{v:.3f}')}\n")
        if out is not None:
            try:
                out.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise UserError(f"cannot create --out {out}: {err.strerror or err}") from None
            write_table(table, out / f"{name}.csv")
    if out is not None:
        print(f"tables written to {out}")


def register(hiring_app: typer.Typer) -> None:
    """Add ``annotations`` under the study's ``hiring`` verb group (once)."""
    if all(group.typer_instance is not annotations_app for group in hiring_app.registered_groups):
        hiring_app.add_typer(annotations_app)
