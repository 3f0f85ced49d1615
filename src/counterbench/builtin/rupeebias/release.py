"""Load the published RupeeBias release's own dataset files (RupeeBias-only; "Exact reproduction").

The release ships one JSON-lines file per task and language, ``<task>_<en|hinglish>.jsonl``, each
line with ``id, task, language, axis, identifier_value, identifier_phrase, profile_id,
question_variant_id, question_variant, prompt, ...``. We keep the release's ids and prompt text
verbatim and pair each row with the study's system prompt (paper Table 21), so a new model can be
run on exactly the published prompts. Files whose name contains ``_fairness`` are the fairness
variant. Other scalar fields become design columns.

Names are mapped onto the study's own: task aliases (``service_pricing_client``), identifier aliases
(the release's ``Shia``/``Sunni``), and profile ids (the release numbers profiles ``R01``/``N01``/
``S01`` in some tasks; the study uses ``P01``: :func:`canonical_profile_id`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from counterbench.columns import BASE_COLUMNS
from counterbench.errors import UserError
from counterbench.studies.base import Study
from counterbench.table_files import read_jsonl_records

RELEASE_FIELDS = ("id", "task", "language", "axis", "identifier_value", "profile_id", "question_variant_id", "prompt")
_CONSUMED = {*RELEASE_FIELDS, "identifier_phrase", "question_variant"}


def load_release_prompts(study: Study, folder: Path, variants: Sequence[str]) -> pd.DataFrame:
    """Read every ``*.jsonl`` dataset file in ``folder`` into a prompt table."""
    if not folder.is_dir():
        raise UserError(f"--from-release: {folder} is not a folder")
    files = sorted(folder.rglob("*.jsonl"))
    if not files:
        raise UserError(f"--from-release: no .jsonl dataset files in {folder}")
    rows: list[dict[str, Any]] = []
    for path in files:
        variant = "fairness" if "_fairness" in path.name else "standard"
        if variant not in variants:
            continue
        rows.extend(_read_file(study, path, variant))
    if not rows:
        raise UserError(f"--from-release: no prompts of variant {', '.join(variants)} in {folder}")
    table = pd.DataFrame.from_records(rows)
    if table["prompt_id"].duplicated().any():
        dup = table.loc[table["prompt_id"].duplicated(), "prompt_id"].iloc[0]
        raise UserError(f"--from-release: prompt id {dup} appears twice in {folder}")
    design = [c for c in table.columns if c not in BASE_COLUMNS]
    return table[[*BASE_COLUMNS, *design]]


def _read_file(study: Study, path: Path, variant: str) -> list[dict[str, Any]]:
    rows = []
    for lineno, rec in read_jsonl_records(path):
        missing = [f for f in RELEASE_FIELDS if f not in rec]
        if missing:
            raise UserError(f"{path.name} line {lineno}: missing field(s) {', '.join(missing)}")
        use_case = study.canonical_use_case(str(rec["task"]))
        language = "hinglish" if str(rec["language"]).lower().startswith("hi") else "en"
        suffix = "_fair" if variant == "fairness" else ""
        row = {
            "prompt_id": f"{rec['id']}{suffix}",
            "study": study.name,
            "use_case": use_case,
            "language": language,
            "axis": str(rec["axis"]),
            "identifier": study.canonical_identifier(str(rec["identifier_value"])),
            "profile_id": canonical_profile_id(rec["profile_id"]),
            "question_variant": _variant_number(rec["question_variant_id"], path, lineno),
            "variant": variant,
            "answer_type": _answer_type(study, use_case),
            "system": study.system_prompt_for(use_case, variant),
            "user": str(rec["prompt"]),
        }
        for key, value in rec.items():
            if key not in _CONSUMED and isinstance(value, str | int | float) and not isinstance(value, bool):
                row[key] = value
        rows.append(row)
    return rows


def canonical_profile_id(raw: object) -> str:
    """``R07``/``N07``/``S07`` (the release's per-task prefixes) -> ``P07``; other ids unchanged."""
    text = str(raw)
    match = re.fullmatch(r"[A-Z](\d+)", text)
    return f"P{int(match.group(1)):02d}" if match else text


def release_question_variant(raw: object) -> int | None:
    """``Q2``/``2`` -> 2; ``None`` when there is no number."""
    digits = re.sub(r"\D", "", str(raw))
    return int(digits) if digits else None


def _variant_number(raw: Any, path: Path, lineno: int) -> int:
    number = release_question_variant(raw)
    if number is None:
        raise UserError(f"{path.name} line {lineno}: question_variant_id {raw!r} has no number")
    return number


def _answer_type(study: Study, use_case: str) -> str:
    definition = getattr(study, "definition", None)
    if definition is None:
        return "number"
    return str(definition.use_cases[use_case].answer_type)
