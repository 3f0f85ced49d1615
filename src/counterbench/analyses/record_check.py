"""Checking a test record against a store (``counterbench verify``): is this the audit the record says?

Decisions:

- Per model of the record, its answers are read back from the store as the analysis read them (the
  study's answers of that model, from the record's runs and generation configs) and the record's
  ``n_answers``, ``n_prompts`` and ``prompt_table_hash`` recomputed; any difference is one line naming the
  model, the item, the record's value and the store's.
- The study's definition hash is recomputed where the study can be found (a built-in or registered study by
  name, or the study file given with ``--study``); otherwise a line says it was not checked — not a failure.
- A file that is not a test record (not JSON, no ``models``, a newer ``record_version``) is a user error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from counterbench.analyses.test_record import RECORD_VERSION, model_records, study_hash
from counterbench.errors import UserError
from counterbench.table_files import read_json_file

__all__ = ["RecordCheck", "check_record", "read_record"]

_COMPARED = ("n_answers", "n_prompts", "prompt_table_hash")


@dataclass
class RecordCheck:
    """What :func:`check_record` found: ``differences`` (empty: the store matches), ``notes`` (not checked)."""

    differences: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)

    @property
    def matches(self) -> bool:
        return not self.differences


def read_record(path: Path) -> dict[str, Any]:
    """The test record in ``path``; one-line :class:`UserError` when it is not one."""
    record = read_json_file(path, f"test record {path}")
    if not isinstance(record, dict) or not isinstance(record.get("models"), dict) or "study" not in record:
        raise UserError(f"{path}: not a test record (no study and models); give the test_record.json a report wrote")
    version = record.get("record_version")
    if not isinstance(version, int) or version > RECORD_VERSION:
        raise UserError(f"{path}: test record version {version!r}; this counterbench reads up to {RECORD_VERSION}")
    return record


def _study_line(record: Mapping[str, Any], study: str | Path | None, found: RecordCheck) -> None:
    from counterbench.analyses.study import resolve_study

    try:
        the_study = resolve_study(study if study is not None else str(record["study"]))
    except UserError as err:
        found.notes.append(f"study {record['study']}: not found here ({err}); its definition hash was not checked "
                           "(give the study file with --study)")
        return
    if the_study.name != record["study"]:
        found.differences.append(f"study: the record's is {record['study']}, --study gives {the_study.name}")
    elif study_hash(the_study) != record.get("study_hash"):
        found.differences.append(f"study {the_study.name}: its definition differs from the record's "
                                 f"(SHA-256 {str(record.get('study_hash'))[:16]}… recorded, "
                                 f"{study_hash(the_study)[:16]}… here)")
    else:
        found.checked.append(f"study {the_study.name}: definition hash matches")


def check_record(record: Mapping[str, Any], load: Callable[[str, str], pd.DataFrame], *,
                 study: str | Path | None = None) -> RecordCheck:
    """Compare ``record`` with the answers ``load(study, model)`` reads back from a store (module notes)."""
    found = RecordCheck()
    _study_line(record, study, found)
    for model, entry in record["models"].items():
        if not isinstance(entry, Mapping):
            continue
        try:
            results = load(str(record["study"]), str(model))
        except UserError as err:
            found.differences.append(f"{model}: {err}")
            continue
        runs, configs = entry.get("run_ids"), entry.get("config_fps")
        if isinstance(runs, list) and "run_id" in results.columns:
            results = results[results["run_id"].isin([int(r) for r in runs])]
        if isinstance(configs, list) and "config_fp" in results.columns:
            results = results[results["config_fp"].astype(str).isin([str(c) for c in configs])]
        here = model_records(results.reset_index(drop=True)).get(str(model), {"n_answers": 0, "n_prompts": 0})
        before = len(found.differences)
        for item in _COMPARED:
            if item in entry and entry[item] != here.get(item):
                found.differences.append(
                    f"{model}: {item} is {entry[item]} in the record, {here.get(item)} in the store")
        if len(found.differences) == before:
            found.checked.append(f"{model}: {int(entry.get('n_answers', 0)):,} answers to "
                                 f"{int(entry.get('n_prompts', 0)):,} prompts, prompt table hash matches")
    return found

