"""Reports: one self-contained offline HTML file and a Markdown twin, built from analysis results only
(the pipeline, :mod:`counterbench.pipeline`, reads the store and analyses it first).

Python API (imported lazily, so ``import counterbench.report`` stays cheap)::

    from counterbench.report import load_analysis_dir, write_report
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from counterbench.report.api import ReportFiles, render_report, write_report
    from counterbench.report.context import ReportInput, load_analysis_dir
    from counterbench.report.samples import select_samples

__all__ = [
    "ReportFiles",
    "ReportInput",
    "load_analysis_dir",
    "render_report",
    "select_samples",
    "write_report",
]

_WHERE = {
    "ReportFiles": "api",
    "render_report": "api",
    "write_report": "api",
    "ReportInput": "context",
    "load_analysis_dir": "context",
    "select_samples": "samples",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(f"counterbench.report.{_WHERE[name]}"), name)
    raise AttributeError(name)
