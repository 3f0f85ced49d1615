"""Writing an analysis to a folder: every table as ``NAME.csv`` and ``NAME.parquet``, plus
``summary.json``. The only module of :mod:`counterbench.analyses` that touches the file system.

Files are written to a temporary name and renamed, so a reader never sees half a table; object
columns that Arrow cannot type (mixed values) are written as text. CSV uses ``.`` decimals, no
index, UTF-8; empty tables keep their header.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

from counterbench.errors import UserError
from counterbench.fileperms import as_user_file


class AnalysisResult(Protocol):
    """What is written: tables (name -> frame) and a JSON-able summary (an :class:`~.result.AnalysisResult`)."""

    tables: dict[str, pd.DataFrame]
    summary: dict[str, Any]

__all__ = ["write_analysis"]


def _atomic(path: Path, write: Callable[[Path], object]) -> None:
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        write(tmp)
        as_user_file(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _arrow_safe(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    for col in out.columns:
        series = out[col]
        if series.dtype == object:
            kinds = {type(v) for v in series.dropna()}
            if len(kinds) > 1 or (kinds and not kinds <= {str, bool, int, float}):
                out[col] = series.map(lambda v: None if v is None or (isinstance(v, float) and math.isnan(v))
                                      else str(v))
            elif not kinds:
                out[col] = series.astype("float64") if len(series) == 0 or series.isna().all() else series
    return out


def _write_csv(frame: pd.DataFrame, path: Path) -> None:
    frame.to_csv(path, index=False)


def _write_parquet(frame: pd.DataFrame, path: Path) -> None:
    frame.to_parquet(path, index=False)


def _json_default(value: Any) -> Any:
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return None if math.isnan(float(value)) else float(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    return str(value)


def _clean(value: Any) -> Any:
    """JSON-safe copy: NaN/inf floats become null, tuples lists."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if isinstance(value, float | np.floating) and not math.isfinite(float(value)):
        return None
    return value


def write_analysis(result: AnalysisResult, out_dir: Path | str) -> list[Path]:
    """Write ``result`` to ``out_dir`` (created if needed); return the written paths."""
    folder = Path(out_dir).expanduser()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UserError(f"cannot create output folder {folder}: {err.strerror or err}") from None
    if not os.access(folder, os.W_OK):
        raise UserError(f"cannot write to output folder {folder}: permission denied")
    written: list[Path] = []
    try:
        for name, table in result.tables.items():
            safe = _arrow_safe(table)
            csv_path, parquet_path = folder / f"{name}.csv", folder / f"{name}.parquet"
            _atomic(csv_path, partial(_write_csv, safe))
            _atomic(parquet_path, partial(_write_parquet, safe))
            written += [csv_path, parquet_path]
        summary_path = folder / "summary.json"
        text = json.dumps(_clean(result.summary), indent=2, ensure_ascii=False, default=_json_default, allow_nan=False)
        _atomic(summary_path, lambda p: p.write_text(text + "\n", encoding="utf-8"))
        written.append(summary_path)
    except OSError as err:
        raise UserError(f"cannot write the analysis to {folder}: {err.strerror or err}") from None
    return written
