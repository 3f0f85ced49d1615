"""Durable writes of response rows: each answer is committed within a few milliseconds of arriving.

Rows are buffered and committed by the event loop itself right after its current round of
callbacks — so answers that arrive together share one commit (a *group commit*) — but at most once
per ``window`` (1 ms by default), or at once when ``max_rows`` rows wait. An answer is therefore on
disk (in the WAL, which survives a killed process) one loop round, and at most ``window``, plus one
commit after the engine recorded it, while a busy run pays one commit per few dozen rows. Committing on the
loop thread costs a fraction of a millisecond per batch (no fsync in WAL mode with
``synchronous=NORMAL``); a background thread was measured to be worse: it must win the GIL back
from the busy event loop for every row of a batch, which delayed commits by tens of milliseconds
(``benchmarks/commit_latency.py``).

The run's new prompt rows ride along, in small chunks, while the first requests are in flight
(:meth:`BatchWriter.save_prompts`): every answer commit also takes the next chunk of waiting prompt rows
(one transaction per loop round for both), and when no answer has been committed for
:data:`PROMPT_IDLE_S` a chunk goes alone. No request waits for the whole prompt table to be stored, and
an answer whose prompt row is not committed yet takes it into its own transaction — so every stored
answer has its prompt, from the first reply on. :meth:`BatchWriter.close` commits the prompt rows still
waiting (a run stopped early). A 10,000-request run against a fast server makes about a third of the
transactions it made with a transaction of its own for every chunk (``benchmarks/commit_latency.py``).

After every commit the writer checks that the store file is still the file it opened (same device
and inode). When it vanished or was replaced, or a write fails (disk full, read-only), the run is
told to stop (:attr:`BatchWriter.failure`) and every row that is not safely in the store is kept:
after a failed write, the rows of that write and all later ones; after the file vanished, every row
the old file held (it is still readable through the open connection). :meth:`BatchWriter.rescue`
writes them to a JSON-lines recovery file — next to the store, else in the working folder, else in
the temporary folder — written whole or not at all, and never empty.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from itertools import islice
from pathlib import Path
from typing import Any

from counterbench.errors import UserError
from counterbench.run.rescue import rescue_file_name
from counterbench.run.store import RESPONSE_COLUMNS, Store

Row = tuple[Any, ...]

#: default group-commit window (seconds): the longest an answer waits before its commit starts
DEFAULT_WINDOW_S = 0.001
#: prompt rows per chunk committed with an answer commit, or alone (a chunk takes under a millisecond)
PROMPT_CHUNK_ROWS = 64
#: a chunk of prompt rows goes in a transaction of its own when no answer was committed for this long (s)
PROMPT_IDLE_S = 0.005


class BatchWriter:
    """Buffer rows and commit them in small groups on the event loop (see the module docstring)."""

    def __init__(self, store: Store, *, max_rows: int = 512, window: float = DEFAULT_WINDOW_S,
                 model_specs: Mapping[str, str] | None = None) -> None:
        self.store = store
        #: label -> model string, written into each recovery record (``model_spec``): its import is checked
        self.model_specs = dict(model_specs or {})
        self.max_rows = max_rows
        self.window = window
        self.rows: list[Row] = []
        self.unsaved: list[Row] = []
        self.written = 0
        self.failure: UserError | None = None
        self.vanished = False
        self._identity = _file_identity(store.path)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.Handle | None = None
        self._last_commit = 0.0
        #: prompt rows not committed yet, by (prompt_id, prompt_hash), in the order they are sent
        self._prompts: dict[tuple[Any, Any], Row] = {}
        self._prompt_timer: asyncio.Handle | None = None

    def attach(self, loop: asyncio.AbstractEventLoop | None) -> None:
        """Commit on a timer of this loop (``None``: every row at once)."""
        self._loop = loop
        if loop is None:
            if self._prompt_timer is not None:
                self._prompt_timer.cancel()
                self._prompt_timer = None
        elif self._prompts and self._prompt_timer is None:
            self._prompt_timer = loop.call_soon(self._on_prompt_chunk)  # the first chunk at once

    def save_prompts(self, records: Sequence[Row]) -> None:
        """Commit these prompt rows (in :data:`~counterbench.run.store.PROMPT_RECORD_COLUMNS` order) in
        chunks between the loop's rounds once attached to it, each with its first answer if that comes
        sooner, and the rest at :meth:`close` (see the module docstring)."""
        for record in records:
            self._prompts[(record[0], record[1])] = record
        if self._loop is not None and self._prompts and self._prompt_timer is None:
            self._prompt_timer = self._loop.call_soon(self._on_prompt_chunk)

    def _on_prompt_chunk(self) -> None:
        self._prompt_timer = None
        idle = time.monotonic() - self._last_commit
        if idle >= PROMPT_IDLE_S:  # no commit took a chunk lately: one alone
            self._save_waiting_prompts(PROMPT_CHUNK_ROWS)
            idle = 0.0
        if self._prompts and self._loop is not None and self.failure is None:
            self._prompt_timer = self._loop.call_later(PROMPT_IDLE_S - idle, self._on_prompt_chunk)

    def _save_waiting_prompts(self, most: int) -> None:
        if self.failure is not None or not self._prompts:
            return
        keys = list(islice(self._prompts, most))
        try:
            self.store.save_prompts([self._prompts[key] for key in keys])
        except UserError as err:
            self.failure = err
            return
        for key in keys:
            del self._prompts[key]
        self._last_commit = time.monotonic()

    def add(self, row: Row) -> None:
        rows = self.rows
        rows.append(row)
        if len(rows) >= self.max_rows or self._loop is None:
            self.flush()
        elif self._timer is None:
            # commit right after the loop's current round of callbacks (answers that arrive together
            # share a commit), but at most once per `window`
            wait = self._last_commit + self.window - time.monotonic()
            loop = self._loop
            self._timer = loop.call_later(wait, self._on_timer) if wait > 0 else loop.call_soon(self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self.flush()

    def flush(self) -> None:
        """Commit the buffered rows now."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        rows, self.rows = self.rows, []
        if rows:
            self._write(rows)
            self._last_commit = time.monotonic()

    def close(self) -> None:
        """Commit everything still buffered (answers, then prompt rows) and stop using the loop."""
        self.attach(None)
        self.flush()
        self._save_waiting_prompts(len(self._prompts))

    def _write(self, rows: list[Row]) -> None:
        if self.failure is None:
            prompts = self._prompts
            # an answer whose prompt row is still waiting takes it into its own transaction, with the next
            # chunk of waiting prompt rows
            with_prompts = [prompts.pop(key) for key in {(row[0], row[1]) for row in rows} if key in prompts] \
                if prompts else []
            if prompts:
                with_prompts += [prompts.pop(key) for key in list(islice(prompts, PROMPT_CHUNK_ROWS))]
            try:
                self.store.write_responses(rows, with_prompts)
            except UserError as err:
                self.failure = err
            else:
                if _file_identity(self.store.path) == self._identity:
                    self.written += len(rows)
                    return
                self._on_vanished()
                return
        self.unsaved.extend(rows)

    def _on_vanished(self) -> None:
        """The store file was deleted or replaced: everything it held goes to the recovery file."""
        self.vanished = True
        self.failure = UserError(
            f"store {self.store.path} was deleted or replaced while the run was writing to it; the run stopped"
        )
        cols = ", ".join(RESPONSE_COLUMNS)
        with contextlib.suppress(UserError):  # the open file stays readable after an unlink
            self.unsaved.extend(self.store.query(f"SELECT {cols} FROM responses ORDER BY id"))
        self.written = 0

    # -- after the run ----------------------------------------------------------------------------

    def rescue(self, folders: Iterable[Path] | None = None) -> Path | None:
        """Write the rows that are not in the store to a recovery ``.jsonl``; return its path (or ``None``)."""
        if not self.unsaved:
            return None
        name = rescue_file_name(self.store.path)
        places = list(folders) if folders is not None else [self.store.path.parent, Path.cwd(),
                                                             Path(tempfile.gettempdir())]
        lines = [json.dumps(self._record(row), ensure_ascii=False) + "\n" for row in self.unsaved]
        for folder in places:
            path = write_whole(folder / name, lines)
            if path is not None:
                return path
        return None


    def _record(self, row: Row) -> dict[str, Any]:
        record = dict(zip(RESPONSE_COLUMNS, row, strict=True))
        spec = self.model_specs.get(str(record.get("model")))
        return record if spec is None else {**record, "model_spec": spec}


def write_whole(path: Path, lines: list[str]) -> Path | None:
    """Write ``lines`` to ``path`` through a temporary file and a rename; ``None`` (nothing left) on failure."""
    tmp = path.with_name(path.name + ".part")
    try:
        with tmp.open("w", encoding="utf-8") as handle:
            handle.writelines(lines)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        return None
    return path if path.stat().st_size > 0 else None


def _file_identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)
