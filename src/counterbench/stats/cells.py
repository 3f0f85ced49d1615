"""Frames cut into cells: the per-cell mean tables and the per-attribute row sets several statistics walk."""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping, Sequence

import pandas as pd

__all__ = ["attribute_rows", "cell_means", "complete_cells", "iter_cells"]


def cell_means(
    frame: pd.DataFrame, cell_cols: Sequence[str], row_col: str, col_col: str, value_col: str, *, where: str = ""
) -> pd.DataFrame:
    """Mean ``value_col`` per cell × ``row_col`` (rows, indexed by the cell and ``row_col``) × ``col_col``
    (columns); NaN values are ignored. ``where`` names the caller in the missing-columns error."""
    missing = [c for c in [*cell_cols, row_col, col_col, value_col] if c not in frame.columns]
    if missing:
        raise ValueError(f"{where + ': ' if where else ''}columns {missing} are not in the frame")
    rows = frame.loc[frame[value_col].notna(), [*cell_cols, row_col, col_col, value_col]]
    return (
        rows.groupby([*cell_cols, row_col, col_col], sort=True, observed=True, dropna=False)[value_col]
        .mean()
        .unstack(col_col)
    )


def iter_cells(table: pd.DataFrame, cell_cols: Sequence[str]) -> list[tuple[tuple[object, ...], pd.DataFrame]]:
    """The blocks of a :func:`cell_means` table, one per cell in sorted order, with the cell key as a tuple
    and the cell levels dropped from the block's index; the whole table as one block when there are no cells."""
    if not cell_cols:
        return [((), table)]
    levels: list[Hashable] = list(cell_cols)
    out = []
    for key, block in table.groupby(level=levels, sort=True, observed=True, dropna=False):
        out.append((key if isinstance(key, tuple) else (key,), block.droplevel(levels)))
    return out


def complete_cells(table: pd.DataFrame, cell_cols: Sequence[str]) -> Iterator[tuple[tuple[object, ...], pd.DataFrame]]:
    """:func:`iter_cells` with each block cut to its complete part: columns with no value dropped, then
    rows missing any remaining column."""
    for key, block in iter_cells(table, cell_cols):
        yield key, block.dropna(axis=1, how="all").dropna(axis=0, how="any")


def attribute_rows(
    frame: pd.DataFrame, attributes: Mapping[str, Sequence[str]]
) -> Iterator[tuple[str, Sequence[str], pd.DataFrame]]:
    """Per attribute (a column of ``frame``) with its levels: the rows at one of those levels.

    Attributes that are not columns, and attributes with no row at a listed level, are skipped.
    """
    for attribute, levels in attributes.items():
        if attribute not in frame.columns:
            continue
        sub = frame[frame[attribute].isin(list(levels))]
        if not sub.empty:
            yield attribute, levels, sub
