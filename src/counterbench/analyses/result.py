"""What an analysis returns: tables (name → DataFrame) and a JSON-able summary."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["AnalysisResult"]


@dataclass
class AnalysisResult:
    """Tables (name → DataFrame, see :mod:`counterbench.analyses.schema`) and a JSON-able summary."""

    tables: dict[str, pd.DataFrame]
    summary: dict[str, Any] = field(default_factory=dict)
    #: the study object analysed (not written): the report takes its names and sections from it
    study: Any = field(default=None, repr=False, compare=False)

    def __getitem__(self, name: str) -> pd.DataFrame:
        return self.tables[name]

    def _repr_html_(self) -> str:
        """A notebook view: the study, then the first rows of each non-empty table."""
        import html

        parts = [f"<h3>{html.escape(str(self.summary.get('title') or self.summary.get('study') or 'analysis'))}</h3>"]
        for name, frame in self.tables.items():
            if frame is not None and not frame.empty:
                parts.append(f"<h4>{html.escape(name)}</h4>" + frame.head(10).to_html(index=False, escape=True))
        return "".join(parts)

    def write(self, out_dir: Path | str) -> list[Path]:
        """Write every table as CSV and Parquet plus ``summary.json`` (see :mod:`.io`)."""
        from counterbench.analyses.io import write_analysis

        return write_analysis(self, out_dir)
