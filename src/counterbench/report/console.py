"""Terminal tables (rich) for the CLI."""

from __future__ import annotations

import pandas as pd
from rich.console import Console
from rich.table import Table


def print_prompt_summary(console: Console, table: pd.DataFrame) -> None:
    """Print prompts per variant × use case × language, like the paper's Table 1."""
    from counterbench.prompts import summarize

    summary = summarize(table)
    view = Table(title="Prompt table")
    for col in ("variant", "use case", "lang", "axes", "ids", "profiles", "QVs", "prompts"):
        view.add_column(col, justify="left" if col in ("variant", "use case", "lang") else "right", no_wrap=True)
    for row in summary.itertuples(index=False):
        view.add_row(
            str(row.variant),
            str(row.use_case),
            str(row.language),
            str(row.axes),
            str(row.identifiers),
            str(row.profiles),
            str(row.question_variants),
            f"{row.prompts:,}",
        )
    view.add_row("", "total", "", "", str(table["identifier"].nunique()), "", "", f"{len(table):,}", style="bold")
    console.print(view)
