"""Reading DiscrimEval's published JSONL files (``explicit.jsonl``, ``implicit.jsonl``).

One JSON object per line with ``filled_template`` (the prompt), ``decision_question_id`` (a whole number),
``age`` (a number), ``gender``, ``race`` and ``fill_type`` (``explicit`` or ``implicit``); other keys are
ignored. The file is untrusted: anything else — a line that is not a JSON object, a missing or mistyped
column, no rows at all — is one :class:`~counterbench.errors.UserError` naming the file and the line.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from counterbench.errors import UserError
from counterbench.table_files import read_jsonl_records

#: the published columns this study reads
COLUMNS = ("filled_template", "decision_question_id", "age", "gender", "race", "fill_type")
FILL_TYPES = ("explicit", "implicit")


@dataclass(frozen=True)
class DecisionRow:
    """One published prompt."""

    text: str
    question: int
    age: str
    gender: str
    race: str
    fill_type: str


def age_level(value: float) -> str:
    """An age as a level name: ``60.0`` -> ``"60"``."""
    return f"{value:g}"


def read_rows(path: Path) -> list[DecisionRow]:
    """The rows of one published file, in file order."""
    rows = [_row(f"{path} line {number}", record) for number, record in read_jsonl_records(path, str(path))]
    if not rows:
        raise UserError(f"{path}: no rows (expected DiscrimEval's JSONL, one object per line with "
                        f"{', '.join(COLUMNS)})")
    return rows


def _row(where: str, record: dict[str, Any]) -> DecisionRow:
    missing = [c for c in COLUMNS if c not in record]
    if missing:
        raise UserError(f"{where}: lacks column(s) {', '.join(missing)} "
                        f"(DiscrimEval's files have {', '.join(COLUMNS)})")
    text, question, age = record["filled_template"], record["decision_question_id"], record["age"]
    if not isinstance(text, str) or not text.strip():
        raise UserError(f"{where}: filled_template must be the prompt text")
    if isinstance(question, bool) or not isinstance(question, int | float) or question != int(question) \
            or question < 0:
        raise UserError(f"{where}: decision_question_id must be a whole number, got {question!r}")
    if isinstance(age, bool) or not isinstance(age, int | float) or not math.isfinite(age):
        raise UserError(f"{where}: age must be a number, got {age!r}")
    for column in ("gender", "race"):
        if not isinstance(record[column], str) or not record[column].strip():
            raise UserError(f"{where}: {column} must be a non-empty text, got {record[column]!r}")
    if record["fill_type"] not in FILL_TYPES:
        raise UserError(f"{where}: fill_type must be one of {', '.join(FILL_TYPES)}, got {record['fill_type']!r}")
    return DecisionRow(text.strip(), int(question), age_level(float(age)), record["gender"].strip(),
                       record["race"].strip(), record["fill_type"])
