"""Batched, durable writes of response rows.

Rows are buffered and committed every ``max_rows`` rows or every ``max_seconds`` (the engine's
ticker calls :meth:`BatchWriter.flush`), whichever comes first, so a response is durable within
about 0.1 s of arriving while the store costs a few microseconds per row. If the store stops
accepting writes (disk full, file removed), the rows stay in memory; :meth:`BatchWriter.rescue`
then writes them to a JSON-lines file next to the store so no paid answer is lost.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from counterbench.errors import UserError
from counterbench.run.store import RESPONSE_COLUMNS, Store

Row = tuple[Any, ...]


class BatchWriter:
    def __init__(self, store: Store, *, max_rows: int = 256, max_seconds: float = 0.1) -> None:
        self.store = store
        self.max_rows = max_rows
        self.max_seconds = max_seconds
        self.rows: list[Row] = []
        self.written = 0
        self.failure: UserError | None = None

    def add(self, row: Row) -> None:
        self.rows.append(row)
        if len(self.rows) >= self.max_rows and self.failure is None:
            self.flush()

    def flush(self) -> None:
        """Commit the buffered rows; on failure keep them and remember the error (no raise)."""
        if not self.rows:
            return
        rows, self.rows = self.rows, []
        try:
            self.store.write_responses(rows)
        except UserError as err:
            self.rows = rows + self.rows
            self.failure = err
            return
        self.failure = None
        self.written += len(rows)

    def rescue(self) -> Path | None:
        """Write rows that could not be committed to ``<store>.unsaved-<time>.jsonl``; return its path."""
        if not self.rows:
            return None
        path = self.store.path.with_name(f"{self.store.path.name}.unsaved-{int(time.time())}.jsonl")
        try:
            with path.open("w", encoding="utf-8") as handle:
                for row in self.rows:
                    handle.write(json.dumps(dict(zip(RESPONSE_COLUMNS, row, strict=True)), ensure_ascii=False))
                    handle.write("\n")
        except OSError:
            return None
        return path
