"""Viewer URLs for analysis table rows, and the hook that puts them on the report's table cells.

The report is a static file; its links point at the viewer's default address
(``http://127.0.0.1:8765``, or ``COUNTERBENCH_VIEWER_URL`` when set), where
``counterbench view --store STORE`` serves the answers. A row of a table links to the slots behind
it: the row's model, language, use case and axis (whichever of them the table has), restricted to
the identifiers the row compares (the canonical pair, or the top and bottom identifier of a maximum
gap). Nothing here names a study.

The report owns this URL format and the viewer reads it from here (``viewer`` imports ``report``,
never the reverse; ``tests/test_layers.py`` checks it).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

if TYPE_CHECKING:
    import pandas as pd

    from counterbench.report.context import ReportContext
    from counterbench.report.tables import TableView

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
DEFAULT_BASE = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}"
#: row columns that narrow the slots, in URL order
SCOPE_COLUMNS: tuple[str, ...] = ("study", "model", "variant", "use_case", "language", "axis")
#: pairs of row columns naming the identifiers a row compares
IDENTIFIER_COLUMNS: tuple[tuple[str, str], ...] = (
    ("reference", "comparison"),
    ("top_identifier", "bottom_identifier"),
)


def viewer_base() -> str:
    """Where report links point: ``COUNTERBENCH_VIEWER_URL`` if set, else :data:`DEFAULT_BASE`."""
    return (os.environ.get("COUNTERBENCH_VIEWER_URL") or DEFAULT_BASE).rstrip("/")


def _present(value: Any) -> bool:
    if value is None:
        return False
    if isinstance(value, float) and math.isnan(value):
        return False
    return str(value) not in ("", "nan", "None", "<NA>")


def query_string(params: Mapping[str, str | Sequence[str]]) -> str:
    """``params`` as a query string; list values repeat their key."""
    pairs: list[tuple[str, str]] = []
    for key, value in params.items():
        values = [value] if isinstance(value, str) else list(value)
        pairs += [(key, str(v)) for v in values if _present(v)]
    return urlencode(pairs)


def slots_url(row: Mapping[str, Any], base: str = DEFAULT_BASE) -> str:
    """The viewer page listing the slots behind one analysis row."""
    params: dict[str, str | list[str]] = {c: str(row[c]) for c in SCOPE_COLUMNS if c in row and _present(row[c])}
    for first, second in IDENTIFIER_COLUMNS:
        if first in row and second in row and _present(row[first]) and _present(row[second]):
            params["identifier"] = [str(row[first]), str(row[second])]
            break
    return f"{base}/slots?{query_string(params)}"


def viewer_command(store: str | None) -> str:
    """The command that starts the viewer on ``store`` (a placeholder when unknown)."""
    from shlex import quote

    return f"counterbench view --store {quote(store) if store else 'STORE.db'}"


def _store_of(ctx: ReportContext) -> str | None:
    source = getattr(ctx.data, "source", "")
    return source if source and Path(source).is_file() else None


def link_rows(view: TableView, frame: pd.DataFrame, ctx: ReportContext, column: str,
              base: str | None = None) -> None:
    """Make ``column``'s cells of ``view`` (rendered from ``frame``, same row order) link to their slots."""
    if column not in view.columns:
        return
    base = base or viewer_base()
    records = frame.to_dict("records")[: len(view.rows)]
    view.links = [slots_url({str(k): v for k, v in r.items()}, base) for r in records]
    view.link_column = view.columns.index(column)
    view.notes.append(f"Each {column} cell opens the answers behind it in the answer viewer ({base}); "
                      f"start it with: {viewer_command(_store_of(ctx))}")
