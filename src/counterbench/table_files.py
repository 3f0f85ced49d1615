"""Table files: one prompt, result or analysis table written as ``.parquet``, ``.csv`` or ``.jsonl``."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pandas as pd

from counterbench.errors import UserError
from counterbench.fileperms import as_user_file

__all__ = ["TABLE_FORMATS", "write_table"]

TABLE_FORMATS = (".parquet", ".csv", ".jsonl")


def write_table(table: pd.DataFrame, path: Path | str) -> Path:
    """Write ``.parquet``/``.csv``/``.jsonl`` atomically: a failure leaves no partial file."""
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
            table.to_csv(tmp, index=False, lineterminator="\n")
        else:
            table.to_json(tmp, orient="records", lines=True, force_ascii=False)
        as_user_file(tmp)
        os.replace(tmp, out)
    except OSError as err:
        raise UserError(f"cannot write {out}: {err.strerror}") from None
    finally:
        tmp.unlink(missing_ok=True)
    return out
