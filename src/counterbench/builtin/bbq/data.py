"""Reading BBQ's published per-category JSONL files (``Age.jsonl``, ``Gender_identity.jsonl``, ...).

One JSON object per line with ``example_id``, ``category``, ``context``, ``question``, ``ans0``–``ans2``,
``label`` (the correct answer's index), ``context_condition`` (``ambig``/``disambig``), ``question_polarity``
(``neg``/``nonneg``), ``answer_info`` (``ans0`` -> [text, group]) and ``additional_metadata`` with
``stereotyped_groups``. Each answer gets a *role*: ``unknown`` (its group is ``unknown``), ``target`` (its
group, or one of its ``-``-separated parts such as ``Black`` in ``M-Black``, is a stereotyped group; compared
case-insensitively) or ``other``. The file is untrusted: anything else is one
:class:`~counterbench.errors.UserError` naming the file and the line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from counterbench.errors import UserError
from counterbench.table_files import read_jsonl_records

COLUMNS = ("example_id", "category", "context", "question", "ans0", "ans1", "ans2", "label", "context_condition",
           "question_polarity", "answer_info", "additional_metadata")
ROLES = ("target", "other", "unknown")
#: the letters of the three answers, in the published order
LETTERS = ("A", "B", "C")


@dataclass(frozen=True)
class BBQItem:
    """One published example."""

    example_id: int
    category: str
    context: str
    question: str
    answers: tuple[str, str, str]
    roles: tuple[str, str, str]
    label: int
    condition: str
    polarity: str


def read_items(path: Path) -> list[BBQItem]:
    items = [_item(f"{path} line {n}", record) for n, record in read_jsonl_records(path, str(path))]
    if not items:
        raise UserError(f"{path}: no rows (expected BBQ's JSONL, one object per line with {', '.join(COLUMNS)})")
    return items


def _item(where: str, record: dict[str, Any]) -> BBQItem:
    missing = [c for c in COLUMNS if c not in record]
    if missing:
        raise UserError(f"{where}: lacks column(s) {', '.join(missing)}")
    texts = [record[c] for c in ("category", "context", "question", "ans0", "ans1", "ans2")]
    if not all(isinstance(t, str) and t.strip() for t in texts):
        raise UserError(f"{where}: category, context, question and ans0-ans2 must be non-empty texts")
    label, example = record["label"], record["example_id"]
    if isinstance(label, bool) or label not in (0, 1, 2):
        raise UserError(f"{where}: label must be 0, 1 or 2, got {label!r}")
    if isinstance(example, bool) or not isinstance(example, int):
        raise UserError(f"{where}: example_id must be a whole number, got {example!r}")
    if record["context_condition"] not in ("ambig", "disambig"):
        raise UserError(f"{where}: context_condition must be ambig or disambig")
    if record["question_polarity"] not in ("neg", "nonneg"):
        raise UserError(f"{where}: question_polarity must be neg or nonneg")
    info, meta = record["answer_info"], record["additional_metadata"]
    groups = meta.get("stereotyped_groups") if isinstance(meta, dict) else None
    if not isinstance(info, dict) or not isinstance(groups, list):
        raise UserError(f"{where}: answer_info must map ans0-ans2 to [text, group] and additional_metadata "
                        "must have stereotyped_groups")
    stereotyped = {str(g).strip().casefold() for g in groups}
    roles = tuple(_role(where, info.get(f"ans{i}"), stereotyped) for i in range(3))
    if roles.count("unknown") != 1:
        raise UserError(f"{where}: answer_info must have exactly one answer of group unknown")
    return BBQItem(example, texts[0], texts[1].strip(), texts[2].strip(), (texts[3], texts[4], texts[5]),
                   roles, int(label), record["context_condition"], record["question_polarity"])  # type: ignore[arg-type]


def _role(where: str, info: Any, stereotyped: set[str]) -> str:
    if not isinstance(info, list) or len(info) != 2 or not all(isinstance(x, str) for x in info):
        raise UserError(f"{where}: answer_info must map ans0-ans2 to [text, group]")
    group = info[1].strip().casefold()
    if group == "unknown":
        return "unknown"
    return "target" if group in stereotyped or set(group.split("-")) & stereotyped else "other"
