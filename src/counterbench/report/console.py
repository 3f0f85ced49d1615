"""Terminal tables (rich) for the CLI."""

from __future__ import annotations

import pandas as pd
from rich.console import Console
from rich.table import Table


def print_prompt_summary(console: Console, table: pd.DataFrame) -> None:
    """Print prompts per (variant ×) use case × language, like the paper's Table 1."""
    from counterbench.prompts import summarize

    summary = summarize(table)
    show_variant = summary["variant"].nunique() > 1
    view = Table(title=f"Prompt table: {table['study'].iloc[0]}" if len(table) else "Prompt table")
    headers = ["variant"] if show_variant else []
    headers += ["use case", "lang", "axes", "idents", "profiles", "QVs", "prompts"]
    for col in headers:
        left = col in ("variant", "use case", "lang")
        view.add_column(col, justify="left" if left else "right", no_wrap=True)
    for row in summary.itertuples(index=False):
        cells = [str(row.variant)] if show_variant else []
        cells += [
            str(row.use_case),
            str(row.language),
            str(row.axes),
            str(row.identifiers),
            str(row.profiles),
            str(row.question_variants),
            f"{row.prompts:,}",
        ]
        view.add_row(*cells)
    total = [""] if show_variant else []
    total += ["total", "", str(table["axis"].nunique()), str(table["identifier"].nunique()), "", "", f"{len(table):,}"]
    view.add_row(*total, style="bold")
    console.print(view)
