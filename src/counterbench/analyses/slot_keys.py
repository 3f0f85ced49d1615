"""Each row's values of some columns as one text: the key that says which rows belong together (a slot).

A missing value is the empty text. Under pandas 3, ``astype(str)`` keeps a missing value missing, so joining
texts row-wise (``agg("|".join, axis=1)``) fails on the first one — and a column that only some use cases
have (``position`` of a choice between identities, ``option_order``, a design column) is missing in every row
of the others. The columns are joined column by column (vectorised), by a separator no study text holds.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

__all__ = ["SEPARATOR", "joined_keys"]

#: between two columns' texts in a key (the ASCII unit separator)
SEPARATOR = "\x1f"


def joined_keys(frame: pd.DataFrame, columns: Sequence[str] | None = None, separator: str = SEPARATOR) -> pd.Series:
    """Each row's ``columns`` (default: all of ``frame``'s; those it lacks are skipped) as one text, a missing
    value as "", joined by ``separator``; an empty text for every row when none is left."""
    names = list(frame.columns) if columns is None else [c for c in columns if c in frame.columns]
    out: pd.Series | None = None
    for name in names:
        column = frame[name]
        text = column.astype(object).where(column.notna(), "").astype(str).astype(object)
        out = text if out is None else out + separator + text
    return pd.Series("", index=frame.index, dtype=object) if out is None else out
