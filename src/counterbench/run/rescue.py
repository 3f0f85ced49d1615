"""The recovery ("rescue") file: the answers a run could not commit, and reading them back into a store.

When the store fails mid-run (deleted, replaced, disk full), the run writes every answer that is not in
the store to ``<store>.unsaved-<time>-<pid>.jsonl`` (:meth:`~counterbench.run.writer.BatchWriter.rescue`):
one JSON object a line, the store's response columns (:data:`~counterbench.run.store.RESPONSE_COLUMNS`)
as keys, and ``model_spec``, the model string behind the record's label. The file belongs to no study:
``counterbench import FILE`` stores it for every study (:func:`import_rescue_files`), and a study's
run-file importer may pass such files on to it.

An import is a run: it is recorded in the store with the model string behind each label, goes through
run's label-identity check (answers labelled ``a`` from another model are refused in one line before
anything is written, unless ``same_model``), and redacts API keys in answers and errors as the run path
does. A record keeps its run when this store holds that run (same label, same model), and is counted to
the import's run otherwise.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from counterbench.errors import UserError
from counterbench.run.store import READING_COLUMNS, RESPONSE_COLUMNS, Store
from counterbench.table_files import read_jsonl_records

__all__ = ["RescueImport", "import_rescue_file", "import_rescue_files", "is_rescue_file", "is_rescue_records",
           "read_rescue_file", "rescue_file_name", "store_rescued"]

#: how a recovery file is named: the store's file name, ``.unsaved-``, the time, the process id
_NAME = re.compile(r"\.unsaved-\d{8}-\d{6}-\d+\.jsonl$")
#: the keys every recovery record has (the reading columns came later: older files lack them)
_REQUIRED = tuple(c for c in RESPONSE_COLUMNS if c not in READING_COLUMNS)


def rescue_file_name(store: Path) -> str:
    """The name of the recovery file of a run on ``store``, now (unique per process and second)."""
    return f"{store.name}.unsaved-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.jsonl"


def is_rescue_file(path: Path) -> bool:
    """Is ``path`` named like a recovery file?"""
    return path.is_file() and bool(_NAME.search(path.name))


def is_rescue_records(records: Sequence[Mapping[str, Any]]) -> bool:
    """Do these records (a file's) carry the response columns, as a recovery file's do?"""
    return bool(records) and all(k in records[0] for k in _REQUIRED)


def read_rescue_file(path: Path) -> list[dict[str, Any]]:
    """The records of a recovery file; :class:`~counterbench.errors.UserError` when it is not one."""
    records = [rec for _, rec in read_jsonl_records(path)]
    if records and not is_rescue_records(records):
        missing = [k for k in _REQUIRED if k not in records[0]]
        raise UserError(f"{path.name}: not a recovery file of a run (line 1 lacks {', '.join(missing[:3])}"
                        f"{' ...' if len(missing) > 3 else ''})")
    return records


@dataclass
class RescueImport:
    """What storing recovery records did: records read, rows new to the store, rows it held already."""

    records: int = 0
    stored: int = 0
    already_stored: int = 0
    by_model: dict[str, int] = field(default_factory=dict)
    statuses: dict[str, int] = field(default_factory=dict)

    def add(self, other: RescueImport) -> None:
        """Count ``other``'s records in with these."""
        self.records += other.records
        self.stored += other.stored
        self.already_stored += other.already_stored
        for mine, theirs in ((self.by_model, other.by_model), (self.statuses, other.statuses)):
            for key, n in theirs.items():
                mine[key] = mine.get(key, 0) + n

    def summary_lines(self, files: Sequence[Path]) -> list[str]:
        """For the terminal: what was read and stored."""
        models = ", ".join(f"{m} ({n:,})" for m, n in sorted(self.by_model.items())) or "none"
        return [f"recovery files: {', '.join(p.name for p in files)}",
                f"answers: {self.records:,} read, {self.stored:,} stored, {self.already_stored:,} already stored",
                f"models: {models}"]


def store_rescued(store: Store, records: Sequence[Mapping[str, Any]]) -> RescueImport:
    """Store recovery records as they are (rows already in the store are left alone)."""
    rows = [tuple(rec.get(c) for c in RESPONSE_COLUMNS) for rec in records]
    changed = store.write_new_responses(rows)
    done = RescueImport(records=len(rows), stored=changed, already_stored=len(rows) - changed)
    for rec in records:
        model, status = str(rec.get("model")), str(rec.get("status"))
        done.by_model[model] = done.by_model.get(model, 0) + 1
        done.statuses[status] = done.statuses.get(status, 0) + 1
    return done


def import_rescue_file(path: Path, store_path: Path | str, *, same_model: bool = False,
                       command: str = "") -> RescueImport:
    """Read the recovery file ``path`` into the store at ``store_path`` (created if missing)."""
    return import_rescue_files([path], store_path, same_model=same_model, command=command)


def import_rescue_files(paths: Sequence[Path], store_path: Path | str, *, same_model: bool = False,
                        command: str = "") -> RescueImport:
    """Read the recovery files ``paths`` into the store at ``store_path`` (created if missing) as a run would
    store their answers (see the module docstring): every file is read and every label checked before
    anything is written, and a refused import of a new store leaves no file behind."""
    from counterbench.run.import_run import import_run
    from counterbench.run.redact import Redactor

    files = [(Path(p), read_rescue_file(Path(p))) for p in paths]
    specs = _model_specs(files)
    redactor = Redactor.from_environment()
    labels = sorted({str(rec.get("model")) for _, records in files for rec in records})
    done = RescueImport()
    params = {"recovery_files": [str(p) for p, _ in files], "models": labels, "model_specs": specs}
    with import_run(store_path, specs, what="this recovery file", command=command, redactor=redactor,
                    default_command="python: import_rescue_files", params=params, same_model=same_model,
                    errors=lambda: done.statuses.get("error", 0)) as (store, run_id):
        for _, records in files:
            clean = [{**rec, **{c: redactor.redact(rec[c]) for c in ("response", "error")
                                if isinstance(rec.get(c), str)}} for rec in records]
            done.add(store_rescued(store, _own_runs(store, clean, specs, run_id)))
    return done


def _model_specs(files: Sequence[tuple[Path, Sequence[Mapping[str, Any]]]]) -> dict[str, str]:
    """Label -> the model string behind it, from the records' ``model_spec`` (files of older versions have
    none); one label with two model strings is refused."""
    specs: dict[str, str] = {}
    for path, records in files:
        for rec in records:
            spec = rec.get("model_spec")
            if spec is None:
                continue
            model = str(rec.get("model"))
            if specs.setdefault(model, str(spec)) != str(spec):
                raise UserError(f"{path.name}: answers labelled {model} come from two models ({specs[model]} and "
                                f"{spec}); a label names one model")
    return specs


def _own_runs(store: Store, records: Sequence[dict[str, Any]], specs: Mapping[str, str],
              run_id: int) -> list[dict[str, Any]]:
    """Each record with its own run when this store's run of that id ran the record's label on the same model,
    and with the import's run otherwise (a run of another store, whose id here may be another run's)."""
    runs: dict[Any, dict[str, Any]] = {}
    for rid, blob in store.query("SELECT run_id, config FROM runs"):
        try:
            config = json.loads(blob or "{}")
        except ValueError:
            config = {}
        runs[rid] = config if isinstance(config, dict) else {}
    out = []
    for rec in records:
        config, model = runs.get(rec.get("run_id")), str(rec.get("model"))
        recorded = (config or {}).get("model_specs") or {}
        own = (config is not None and model in (config.get("models") or [])
               and specs.get(model, recorded.get(model)) == recorded.get(model))
        out.append(rec if own else {**rec, "run_id": run_id})
    return out
