"""Table files: one prompt, result or analysis table written as ``.parquet``, ``.csv`` or ``.jsonl``."""

from __future__ import annotations

import csv
import os
import tempfile
from pathlib import Path

import pandas as pd

from counterbench.errors import UserError
from counterbench.fileperms import as_user_file

__all__ = ["TABLE_FORMATS", "write_table"]

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
