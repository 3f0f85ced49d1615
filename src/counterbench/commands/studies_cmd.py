"""``counterbench studies``: the studies reachable by name (built-in and installed through entry points)."""

from __future__ import annotations

import typer


def studies_command() -> None:
    """List the registered studies: built-in ones and those installed packages add (entry-point group
    ``counterbench.studies``). Any study file (.yaml) can be given by path instead of a name."""
    from rich.console import Console
    from rich.table import Table

    from counterbench.studies.registry import describe_studies

    table = Table(title="Studies (or give a path to a study .yaml)")
    for column in ("name", "title", "outcomes", "languages", "source"):
        table.add_column(column, overflow="fold")
    for row in describe_studies():
        table.add_row(row["name"], row["title"], row["outcomes"], row["languages"], row["source"])
    Console(width=140).print(table)


def register(app: typer.Typer) -> None:
    app.command("studies")(studies_command)
