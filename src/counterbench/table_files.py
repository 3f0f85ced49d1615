"""Table files: one prompt, result or analysis table written as ``.parquet``, ``.csv`` or ``.jsonl``."""

from __future__ import annotations

import csv
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from counterbench.errors import UserError
from counterbench.fileperms import as_user_file
from counterbench.json_limits import JSONLimitError, loads_bounded

__all__ = ["TABLE_FORMATS", "read_jsonl_records", "write_table"]

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


def read_jsonl_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """The JSON objects of a ``.jsonl`` file with their line numbers; blank lines are skipped.

    A file that cannot be read, a line that is not JSON or not an object, and text that is not UTF-8
    raise :class:`~counterbench.errors.UserError` naming the file and the line.
    """
    try:
        handle = path.open(encoding="utf-8")
    except OSError as err:
        raise UserError(f"cannot read {path}: {err.strerror or err}") from None
    with handle:
        lineno = 0
        try:
            for lineno, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    rec = loads_bounded(line)
                except JSONLimitError as err:
                    raise UserError(f"{path.name}:{lineno}: {err}") from None
                except json.JSONDecodeError:
                    raise UserError(f"{path.name}:{lineno}: not valid JSON") from None
                if not isinstance(rec, dict):
                    raise UserError(f"{path.name}:{lineno}: expected a JSON object")
                yield lineno, rec
        except UnicodeDecodeError:
            raise UserError(f"{path.name}:{lineno + 1}: not UTF-8 text (is it a .jsonl file?)") from None
