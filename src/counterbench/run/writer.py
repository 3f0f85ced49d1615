"""Batched, durable writes of response rows.

Rows are buffered and committed every ``max_rows`` rows or ``max_seconds`` after the first row of
a batch arrived (a timer on the event loop, armed only while rows wait), whichever comes first, so a
response is durable within about 0.1 s of arriving while the store costs a few microseconds per row
and an idle run wakes nothing up. Commits run on one
background thread (SQLite releases the GIL while it writes, so the event loop keeps sending);
batches are committed in order. If the store stops accepting writes (disk full, file removed),
the rows are kept in memory; :meth:`BatchWriter.rescue` then writes them to a JSON-lines file
next to the store so no paid answer is lost.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from counterbench.errors import UserError
from counterbench.run.store import RESPONSE_COLUMNS, Store

Row = tuple[Any, ...]


class BatchWriter:
    def __init__(self, store: Store, *, max_rows: int = 256, max_seconds: float = 0.1, background: bool = True) -> None:
        self.store = store
        self.max_rows = max_rows
        self.max_seconds = max_seconds
        self.rows: list[Row] = []
        self.unsaved: list[Row] = []
        self.written = 0
        self.failure: UserError | None = None
        self._lock = threading.Lock()
        self._pending: list[Future[None]] = []
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="counterbench-store") if background else None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None

    def attach(self, loop: asyncio.AbstractEventLoop | None) -> None:
        """Flush on a timer of this loop (``None``: only by size and explicit :meth:`flush`)."""
        self._loop = loop

    def save_prompts(self, records: list[tuple[Any, ...]]) -> None:
        """Store the run's prompt rows on the writer thread, ahead of (and in order with) every answer.

        Inserting thousands of prompt rows takes tens of milliseconds; done here it overlaps with the
        first requests instead of delaying them. A failure stops the run like any failed write.
        """
        if self._executor is None:
            self._save_prompts(records)
        else:
            self._pending.append(self._executor.submit(self._save_prompts, records))

    def _save_prompts(self, records: list[tuple[Any, ...]]) -> None:
        try:
            self.store.save_prompts(records)
        except UserError as err:
            self.failure = err

    def add(self, row: Row) -> None:
        rows = self.rows
        rows.append(row)
        if len(rows) >= self.max_rows:
            self.flush(wait=False)
        elif len(rows) == 1 and self._loop is not None:
            self._timer = self._loop.call_later(self.max_seconds, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self.flush(wait=False)

    def flush(self, *, wait: bool = True) -> None:
        """Hand the buffered rows to the writer thread; with ``wait``, return once all are committed."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        rows, self.rows = self.rows, []
        if rows:
            if self._executor is None:
                self._write(rows)
            else:
                self._pending.append(self._executor.submit(self._write, rows))
        if wait:
            for future in self._pending:
                future.result()
            self._pending.clear()
        else:
            self._pending = [f for f in self._pending if not f.done()]

    def _write(self, rows: list[Row]) -> None:
        if self.failure is None:
            try:
                self.store.write_responses(rows)
            except UserError as err:
                self.failure = err
            else:
                self.written += len(rows)
                return
        with self._lock:
            self.unsaved.extend(rows)

    def close(self) -> None:
        """Commit everything still buffered (one last try for rows that failed) and stop the thread."""
        self._loop = None
        self.flush(wait=True)
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
        if self.unsaved:
            rows, self.unsaved = self.unsaved, []
            self.failure = None
            self._write(rows)

    def rescue(self) -> Path | None:
        """Write rows that could not be committed to ``<store>.unsaved-<time>.jsonl``; return its path."""
        if not self.unsaved:
            return None
        path = self.store.path.with_name(f"{self.store.path.name}.unsaved-{int(time.time())}.jsonl")
        try:
            with path.open("w", encoding="utf-8") as handle:
                for row in self.unsaved:
                    handle.write(json.dumps(dict(zip(RESPONSE_COLUMNS, row, strict=True)), ensure_ascii=False))
                    handle.write("\n")
        except OSError:
            return None
        return path
