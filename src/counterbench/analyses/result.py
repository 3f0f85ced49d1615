"""What an analysis returns: tables (name → DataFrame) and a JSON-able summary."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["AnalysisResult"]


@dataclass
class AnalysisResult:
    """Tables (name → DataFrame, see :mod:`counterbench.analyses.schema` and each family's declarations) and a
    JSON-able summary."""

    tables: dict[str, pd.DataFrame]
    summary: dict[str, Any] = field(default_factory=dict)
    #: the study object analysed (not written): the report takes its names and sections from it
    study: Any = field(default=None, repr=False, compare=False)

    def __getitem__(self, name: str) -> pd.DataFrame:
        return self.tables[name]

    def _repr_html_(self) -> str:
        """A notebook view: the finding in words, a compact leaderboard, the tables behind ``<details>``
        (:mod:`counterbench.analyses.html_view`)."""
        return self.html_view()

    def html_view(self, lines: Sequence[str] = ()) -> str:
        """The notebook view with ``lines`` of plain text after the leaderboard (the audit's status)."""
        from counterbench.analyses.html_view import analysis_html

        return analysis_html(self.tables, self.summary, lines)

    def write(self, out_dir: Path | str) -> list[Path]:
        """Write every table as CSV and Parquet plus ``summary.json`` (see :mod:`.io`)."""
        from counterbench.analyses.io import write_analysis

        return write_analysis(self, out_dir)
