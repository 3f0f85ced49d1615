"""Table files: one prompt, result or analysis table written as ``.parquet``, ``.csv`` or ``.jsonl``; and the
strict readers of the JSONL, JSON and CSV files a user gives (recovery files, a study's data files,
published data files, annotation sheets, test records, ...): one rule for each format, one line naming the
file (and line) for every way it can fail, as :mod:`counterbench.yaml_files` is for YAML."""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from counterbench.errors import UserError, cannot_read, nearest
from counterbench.fileperms import as_user_file
from counterbench.json_limits import JSONLimitError, loads_bounded
from counterbench.yaml_files import MAX_BYTES, read_text_file

__all__ = ["TABLE_FORMATS", "read_csv_file", "read_json_file", "read_jsonl_records", "write_table"]

TABLE_FORMATS = (".parquet", ".csv", ".jsonl")


def write_table(table: pd.DataFrame, path: Path | str, *, quote_text: bool = False) -> Path:
    """Write ``.parquet``/``.csv``/``.jsonl`` atomically: a failure leaves no partial file.

    ``quote_text`` quotes every text cell of a CSV file (a cell holding a carriage return then stays one
    cell: Python's csv module leaves a lone ``\\r`` unquoted when lines end in ``\\n``).
    """
    out = Path(path)
    suffix = out.suffix.lower()
    if suffix not in TABLE_FORMATS:
        raise UserError(f"cannot write {out}: use a file ending in {', '.join(TABLE_FORMATS)}")
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        raise UserError(f"cannot write {out}: folder {parent} does not exist")
    if out.is_dir():
        raise UserError(f"cannot write {out}: it is a folder")
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=parent)
    except OSError as err:
        raise UserError(f"cannot write {out}: {err.strerror}") from None
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        if suffix == ".parquet":
            table.to_parquet(tmp, index=False, engine="pyarrow")
        elif suffix == ".csv":
            table.to_csv(tmp, index=False, lineterminator="\n", quoting=csv.QUOTE_NONNUMERIC if quote_text else
                         csv.QUOTE_MINIMAL)
        else:
            table.to_json(tmp, orient="records", lines=True, force_ascii=False)
        as_user_file(tmp)
        os.replace(tmp, out)
    except OSError as err:
        raise UserError(f"cannot write {out}: {err.strerror}") from None
    finally:
        tmp.unlink(missing_ok=True)
    return out


def _json_problem(err: ValueError) -> str:
    if isinstance(err, JSONLimitError):
        return str(err)
    if isinstance(err, json.JSONDecodeError):
        return f"not valid JSON ({err.msg})"
    return f"not valid JSON ({err})"


def read_jsonl_records(path: Path, what: str | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """The JSON objects of a ``.jsonl`` file with their line numbers; blank lines are skipped.

    Read strictly (one rule for every JSONL file a user gives): UTF-8 text; each line one JSON object
    within :mod:`~counterbench.json_limits`' nesting and size limits, no key twice in an object, no
    ``NaN``/``Infinity``. Anything else raises :class:`~counterbench.errors.UserError` naming the file
    (``what``, default its name) and the line: ``jobs.jsonl line 3: duplicate key 'title' ...``.
    """
    what = what or path.name
    try:
        handle = path.open(encoding="utf-8")
    except OSError as err:
        raise cannot_read(what, err) from None
    with handle:
        lineno = 0
        try:
            for lineno, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    rec = loads_bounded(line, strict=True)
                except ValueError as err:
                    raise UserError(f"{what} line {lineno}: {_json_problem(err)}") from None
                if not isinstance(rec, dict):
                    raise UserError(f"{what} line {lineno}: expected a JSON object, got {type(rec).__name__}")
                yield lineno, rec
        except UnicodeDecodeError:
            raise UserError(f"{what} line {lineno + 1}: not UTF-8 text (is it a .jsonl file?); "
                            "save it as UTF-8") from None


def read_json_file(path: Path, what: str | None = None, *, max_bytes: int = MAX_BYTES) -> Any:
    """The content of a ``.json`` file a user gives, read as strictly as :func:`read_jsonl_records` reads a
    line (UTF-8, nesting and size limits, no duplicate key, no ``NaN``); one-line
    :class:`~counterbench.errors.UserError` naming the file otherwise."""
    what = what or path.name
    text = read_text_file(path, what, max_bytes=max_bytes)
    try:
        return loads_bounded(text, strict=True)
    except ValueError as err:
        line = f"line {err.lineno}: " if isinstance(err, json.JSONDecodeError) else ""
        raise UserError(f"{what}: {line}{_json_problem(err)}") from None


def read_csv_file(path: Path, what: str | None = None, *, needed: Sequence[str] = (),
                  hint: str = "save it as UTF-8 CSV", as_text: bool = True,
                  max_bytes: int = MAX_BYTES) -> pd.DataFrame:
    """A CSV file a user gives: UTF-8, at most ``max_bytes``, a header with each column once and the
    ``needed`` columns, rows as wide as the header; one-line :class:`~counterbench.errors.UserError` naming
    the file otherwise. ``as_text``: every cell as text (``""`` when empty); otherwise pandas' types, an
    empty cell missing."""
    what = what or path.name
    text = read_text_file(path, what, hint, max_bytes)
    columns = f" (expected a CSV with the columns {', '.join(needed)})" if needed else ""
    if not text.strip():
        raise UserError(f"{what}: the file is empty{columns}")
    header = next(csv.reader(io.StringIO(text)), [])
    twice = sorted({name for name in header if header.count(name) > 1})
    if twice:
        raise UserError(f"{what}: column '{twice[0]}' appears twice in the header; each column may appear once")
    try:
        frame = (pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False) if as_text else
                 pd.read_csv(io.StringIO(text), keep_default_na=False, na_values=[""]))
    except pd.errors.EmptyDataError:
        raise UserError(f"{what}: the file is empty{columns}") from None
    except (pd.errors.ParserError, csv.Error, ValueError) as err:
        raise UserError(f"{what}: not a valid CSV ({' '.join(str(err).split())})") from None
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise UserError(f"{what}: no column '{missing[0]}'{nearest(missing[0], list(map(str, frame.columns)))} "
                        f"(needed: {', '.join(needed)})")
    return frame
