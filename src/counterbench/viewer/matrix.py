"""The cross-model matrix: for one use case, model × identifier (or axis, language, profile, question
variant, prompt variant, or any column the study's design gives its prompts: a group, a level), each cell
the mean of the answers' measures in the outcome kind's unit (an amount, a rate, a score, the share giving
the positive answer, a text metric) with its answer count.

Nothing here names a kind: what a cell's number is comes from the kind (``describe``) and each answer's
measure from the catalog (:func:`counterbench.outcomes.units.answer_measures`). A kind whose single answer has
no number of its own (a choice among identities, mapped back through the prompt's design columns) shows
counts and no mean. Rows sort by their label or by any model's column (server-side, ``?sort=`` and
``?order=``); :func:`as_csv` and :func:`as_json` write the same view.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from counterbench.errors import UserError
from counterbench.outcomes import get_kind, spec_from_answer_type
from counterbench.outcomes.units import kind_of
from counterbench.run.results import FORMULA_STARTS
from counterbench.viewer.catalog import Catalog

#: the prompt columns a matrix's rows may be (``?by=``)
ROWS_BY: tuple[str, ...] = ("identifier", "axis", "language", "profile_id", "question_variant", "variant")
#: design columns offered as rows only when they take at most this many values
MAX_DESIGN_VALUES = 200
#: the sort key of the rows' own label (any other key is a model)
LABEL = "row"


@dataclass(frozen=True)
class Cell:
    """One model's answers in one row: their mean measure (``None`` without a usable one) and counts."""

    mean: float | None
    answers: int
    usable: int


@dataclass
class MatrixRow:
    label: str
    #: model -> its cell (a model with no answer in this row has none)
    cells: dict[str, Cell] = field(default_factory=dict)
    #: the filters that select this row's answers (a design column's row: its identifiers and profiles)
    narrows: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class Matrix:
    study: str
    use_case: str
    by: str
    #: what a cell's mean is, in the kind's words (``share answering yes (%)``)
    measure: str
    models: list[str]
    rows: list[MatrixRow]
    sort: str
    descending: bool
    #: the filters the view applied (the use case included), for links and downloads
    filters: dict[str, list[str]]
    #: what rows may be: :data:`ROWS_BY`, then the design columns of the use case's prompts
    rows_by: list[str] = field(default_factory=lambda: list(ROWS_BY))


def measure_words(answer_type: str | None) -> str:
    """What the mean of ``answer_type``'s measures is, as its kind says it."""
    if not answer_type:
        return get_kind(kind_of(None)).describe(get_kind(kind_of(None)).decode("number"))
    try:
        spec = spec_from_answer_type(answer_type)
    except UserError:  # an answer type this version cannot read
        return "mean stored value"
    return str(get_kind(spec.kind).describe(spec))


def chosen_use_case(catalog: Catalog, filters: Mapping[str, Sequence[str]]) -> str:
    """The use case filtered to (the first one given), else the store's first use case ('' in an empty store)."""
    given = [v for v in filters.get("use_case", ()) if v]
    if given:
        return given[0]
    known = catalog.options.get("use_case", [])
    return known[0] if known else ""


def design_columns(catalog: Catalog, use_case: str) -> list[str]:
    """The columns the study's design gives ``use_case``'s prompts (a group, a level, a role ...) whose values
    are text or numbers, in the first prompt's order, at most :data:`MAX_DESIGN_VALUES` values each."""
    known = ", ".join("?" * (len(ROWS_BY) + 1))  # and not "cells", the JSON's key of a row's cells
    found = catalog.query(
        "SELECT j.key FROM main.prompts p, json_each(CASE WHEN json_valid(p.design) AND json_type(p.design) = "
        "'object' THEN p.design END) j WHERE p.use_case = ? AND j.type IN ('text', 'integer', 'real') AND "
        f"instr(j.key, '\"') = 0 AND j.key NOT IN ({known}) GROUP BY j.key HAVING count(DISTINCT j.value) <= ? "
        "ORDER BY min(j.id)", [use_case, *ROWS_BY, "cells", MAX_DESIGN_VALUES])
    return [str(k) for (k,) in found]


def _grouped(catalog: Catalog, by: str, active: Mapping[str, Sequence[str]]) -> list[tuple[Any, ...]]:
    """Per (row value, model): answers, usable answers, mean measure, first id, identifiers, profiles."""
    where, params = catalog.where(active, "c.")
    if by in ROWS_BY:
        row, joins = f"c.{by}", ""
    else:  # a design column, read from the prompt behind each answer
        row = "json_extract(p.design, ?)"
        params = [f'$."{by}"', *params]
        joins = (" JOIN main.responses r ON r.id = c.id LEFT JOIN main.prompts p ON p.prompt_id = r.prompt_id "
                 "AND p.prompt_hash = r.prompt_hash")
    return catalog.query(
        f"SELECT {row} AS row_value, c.model, count(*), sum(c.status = 'ok' AND c.measure IS NOT NULL), "
        "avg(CASE WHEN c.status = 'ok' THEN c.measure END), min(c.id), json_group_array(DISTINCT c.identifier), "
        f"json_group_array(DISTINCT c.profile_id) FROM cat.items c{joins}{where} GROUP BY row_value, c.model "
        "ORDER BY min(c.id)", params)


def build(catalog: Catalog, filters: Mapping[str, Sequence[str]], *, by: str = "identifier", sort: str = "",
          descending: bool = False) -> Matrix:
    """The matrix of ``filters`` (one use case: :func:`chosen_use_case`), rows by ``by`` (one of
    :data:`ROWS_BY` or of :func:`design_columns`), sorted by ``sort`` (:data:`LABEL`, a model, or '' for the
    store's order)."""
    use_case = chosen_use_case(catalog, filters)
    rows_by = [*ROWS_BY, *design_columns(catalog, use_case)]
    if by not in rows_by:
        by = ROWS_BY[0]
    active = {k: [v for v in vals if v] for k, vals in filters.items() if any(vals)}
    active["use_case"] = [use_case]
    where, params = catalog.where(active)
    grouped = _grouped(catalog, by, active)
    types = catalog.query(f"SELECT answer_type, study FROM cat.items{where} ORDER BY id LIMIT 1", params)
    answer_type, study = (str(types[0][0] or ""), str(types[0][1])) if types else ("", "")
    rows: dict[str, MatrixRow] = {}
    present: list[str] = []
    for value, model, answers, usable, mean, _, identifiers, profiles in grouped:
        label, model = ("" if value is None else _text_of(value)), str(model)
        finite = mean is not None and math.isfinite(float(mean))
        row = rows.setdefault(label, MatrixRow(label))
        row.cells[model] = Cell(float(mean) if finite else None, int(answers), int(usable or 0))
        if by not in ROWS_BY:
            for key, values in (("identifier", identifiers), ("profile_id", profiles)):
                row.narrows[key] = list(dict.fromkeys([*row.narrows.get(key, []), *json.loads(values)]))
        present.append(model)
    order = catalog.options.get("model", [])
    models = sorted(set(present), key=lambda m: (order.index(m) if m in order else len(order), m))
    if sort != LABEL and sort not in models:
        sort = ""
    for row in rows.values():
        row.narrows = row.narrows or {by: [row.label]}
    out = Matrix(study, use_case, by, measure_words(answer_type), models, list(rows.values()), sort, descending,
                 active, rows_by)
    sort_rows(out)
    return out


def _text_of(value: Any) -> str:
    """A row value as text: a whole number without ``.0`` (a design's level ``2.0`` reads ``2``)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def sort_rows(matrix: Matrix) -> None:
    """Order ``matrix.rows`` by its label or by one model's mean (rows without a mean there last)."""
    if not matrix.sort:
        return
    if matrix.sort == LABEL:
        matrix.rows.sort(key=lambda r: r.label.casefold(), reverse=matrix.descending)
        return
    with_mean = [r for r in matrix.rows if _mean(r, matrix.sort) is not None]
    without = [r for r in matrix.rows if _mean(r, matrix.sort) is None]
    with_mean.sort(key=lambda r: (_mean(r, matrix.sort) or 0.0, r.label), reverse=matrix.descending)
    matrix.rows = with_mean + without


def _mean(row: MatrixRow, model: str) -> float | None:
    cell = row.cells.get(model)
    return cell.mean if cell else None


def as_json(matrix: Matrix) -> dict[str, Any]:
    """The view as JSON: its use case, row column, measure, models and rows in the shown order."""
    return {
        "study": matrix.study, "use_case": matrix.use_case, "by": matrix.by, "measure": matrix.measure,
        "sort": matrix.sort or None, "order": "desc" if matrix.descending else "asc",
        "filters": matrix.filters, "models": matrix.models,
        "rows": [{matrix.by: row.label, "cells": {
            m: {"mean": c.mean, "answers": c.answers, "usable": c.usable}
            for m in matrix.models if (c := row.cells.get(m)) is not None}} for row in matrix.rows],
    }


def _text(value: str) -> str:
    """A text cell as :func:`counterbench.run.results.spreadsheet_safe` writes it (a formula start gets ``'``)."""
    return "'" + value if value.startswith(FORMULA_STARTS) else value


def as_csv(matrix: Matrix) -> str:
    """The view as CSV, one line per row in the shown order: the row's label, then per model its mean
    (the measure named in the header), answers and usable answers (empty where the model has none)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    header = [matrix.by]
    for model in matrix.models:
        header += [_text(f"{model} {matrix.measure}"), _text(f"{model} answers"), _text(f"{model} usable")]
    writer.writerow(header)
    for row in matrix.rows:
        line: list[Any] = [_text(row.label)]
        for model in matrix.models:
            cell = row.cells.get(model)
            line += ["", "", ""] if cell is None else [
                "" if cell.mean is None else repr(round(cell.mean, 6)), cell.answers, cell.usable]
        writer.writerow(line)
    return buffer.getvalue()
