"""The recovery ("rescue") file: the answers a run could not commit, and reading them back into a store.

When the store fails mid-run (deleted, replaced, disk full), the run writes every answer that is not in
the store to ``<store>.unsaved-<time>-<pid>.jsonl`` (:meth:`~counterbench.run.writer.BatchWriter.rescue`):
one JSON object a line, the store's response columns (:data:`~counterbench.run.store.RESPONSE_COLUMNS`)
as keys. The file belongs to no study: ``counterbench import FILE`` stores it for every study
(:func:`import_rescue_file`), and a study's run-file importer may pass such files on to it.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from counterbench.run.store import READING_COLUMNS, RESPONSE_COLUMNS, Store, open_store
from counterbench.table_files import read_jsonl_records

__all__ = ["RescueImport", "import_rescue_file", "is_rescue_file", "is_rescue_records", "read_rescue_file",
           "rescue_file_name", "store_rescued"]

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
    from counterbench.errors import UserError

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


def import_rescue_file(path: Path, store_path: Path | str) -> RescueImport:
    """Read the recovery file ``path`` into the store at ``store_path`` (created if missing)."""
    records = read_rescue_file(path)
    with open_store(store_path) as store:
        return store_rescued(store, records)
