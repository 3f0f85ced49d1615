"""The report's test record: a table in its Methods and ``test_record.json`` beside it.

The analysis writes the record (:mod:`counterbench.analyses.test_record`); a report read from a store adds
the store's record of the runs behind the answers (:func:`counterbench.run.run_records.run_records`:
commands, dates, model strings and endpoints — never a key). ``counterbench verify test_record.json --store
S`` checks it against a store (:mod:`counterbench.analyses.record_check`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from counterbench.report import tables as t
from counterbench.report.context import ReportInput
from counterbench.report.document import Section

__all__ = ["RECORD_FILE", "full_record", "record_json", "record_table"]

#: the record's file name, beside the report
RECORD_FILE = "test_record.json"
_SQLITE_MAGIC = b"SQLite format 3\x00"


def _is_store(source: str) -> bool:
    path = Path(source) if source else None
    if path is None or not path.is_file():
        return False
    try:
        with path.open("rb") as handle:
            return handle.read(len(_SQLITE_MAGIC)) == _SQLITE_MAGIC
    except OSError:
        return False


def full_record(data: ReportInput) -> dict[str, Any] | None:
    """The analysis's test record, with the runs from the store the report was read from (``None``: the
    analysis has no record, e.g. one written by an older counterbench)."""
    record = data.summary.get("test_record")
    if not isinstance(record, Mapping):
        return None
    out = dict(record)
    if _is_store(data.source) and "runs" not in out:
        from counterbench.run.run_records import run_records

        run_ids = {int(r) for m in (out.get("models") or {}).values() if isinstance(m, Mapping)
                   for r in m.get("run_ids") or []}
        out["store"] = str(Path(data.source).resolve())
        out["runs"] = run_records(data.source, run_ids)
    return out


def record_json(record: Mapping[str, Any]) -> str:
    """The record as the text of ``test_record.json``."""
    return json.dumps(record, indent=2, ensure_ascii=False, sort_keys=False, default=str) + "\n"


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _short(digest: Any) -> str:
    return str(digest)[:16] + "…" if isinstance(digest, str) and len(digest) > 16 else str(digest or "—")


def record_table(record: Mapping[str, Any] | None) -> Any:
    """The Methods table of the record: one row per item (``None`` when there is no record)."""
    if not isinstance(record, Mapping):
        return None
    study = f"{record.get('study', '—')} (definition SHA-256 {_short(record.get('study_hash'))})"
    rows = [{"item": "Study", "value": study}]
    models = _mapping(record.get("models"))
    for model, info in models.items():
        if not isinstance(info, Mapping):
            continue
        runs = ", ".join(str(r) for r in info.get("run_ids") or []) or "—"
        rows.append({"item": f"Model {model}", "value": (
            f"{int(info.get('n_answers', 0)):,} answers to {int(info.get('n_prompts', 0)):,} prompts "
            f"(prompt table SHA-256 {_short(info.get('prompt_table_hash'))}); runs {runs}; "
            f"answers {info.get('first_answer') or '—'} to {info.get('last_answer') or '—'}")})
    for run in record.get("runs") or []:
        if isinstance(run, Mapping):
            specs = ", ".join(f"{k} = {v}" for k, v in (run.get("model_specs") or {}).items())
            ends = ", ".join(f"{k}: {v}" for k, v in (run.get("endpoints") or {}).items() if v)
            rows.append({"item": f"Run {run.get('run_id')}", "value": (
                f"{run.get('kind')} {run.get('status')}, "
                f"{run.get('started_at') or '—'} to {run.get('ended_at') or '—'}, "
                f"counterbench {run.get('counterbench_version') or '—'}; {specs or 'no model strings recorded'}"
                + (f"; endpoints {ends}" if ends else ""))})
    options = _mapping(record.get("options"))
    rows.append({"item": "Options that change numbers", "value": ", ".join(
        f"{k} {json.dumps(v, ensure_ascii=False, default=str)}" for k, v in options.items()) or "—"})
    software = _mapping(record.get("software"))
    rows.append({"item": "Software", "value": ", ".join(f"{k} {v}" for k, v in software.items()) or "—"})
    rows.append({"item": "Analysed at", "value": str(record.get("analysed_at") or "—")})
    return t.table_view(pd.DataFrame(rows), [t.text("item", "Item"), t.text("value", "Record")],
                        caption=f"Test record (in full in {RECORD_FILE} beside this report)", collapse_over=None,
                        css="prose")


def add_record_table(section: Section, record: Mapping[str, Any] | None) -> None:
    """Append the record's table to ``section`` when there is a record."""
    view = record_table(record)
    if view is not None:
        section.tables.append(view)
