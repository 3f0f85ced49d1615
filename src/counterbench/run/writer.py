"""Durable writes of response rows: each answer is committed within a few milliseconds of arriving.

The event loop only appends a row to a queue (a C-level ``SimpleQueue.put``, no lock, no wake-up
of the loop). One background thread commits: it takes the first waiting row, waits ``window``
seconds (2 ms by default) for the rows that arrive meanwhile, and commits them all in one
transaction — a *group commit*. An answer is therefore on disk (in the WAL, which survives a killed
process) at most ``window`` plus one commit after it arrived, while a busy run still pays one
commit per few dozen rows (measured: ``benchmarks/run_throughput.py``). SQLite releases the GIL
while it writes, so the event loop keeps sending.

After every commit the thread checks that the store file is still the file it opened (same device
and inode). When it vanished or was replaced, or a write fails (disk full, read-only), the run is
told to stop (:attr:`BatchWriter.failure`) and every row that is not safely in the store is kept:
after a failed write, the rows of that write and all later ones; after the file vanished, every row
the old file held (it is still readable through the open connection). :meth:`BatchWriter.rescue`
writes them to a JSON-lines recovery file — next to the store, else in the working folder, else in
the temporary folder — written whole or not at all, and never empty.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import tempfile
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from counterbench.errors import UserError
from counterbench.run.store import RESPONSE_COLUMNS, Store

Row = tuple[Any, ...]

#: default group-commit window (seconds): the longest an answer waits before its commit starts
DEFAULT_WINDOW_S = 0.002
_STOP = object()


class BatchWriter:
    """Commit rows on a background thread (``background=False``: synchronously, for tests and imports)."""

    def __init__(
        self, store: Store, *, max_rows: int = 512, window: float = DEFAULT_WINDOW_S, background: bool = True
    ) -> None:
        self.store = store
        self.max_rows = max_rows
        self.window = window
        self.unsaved: list[Row] = []
        self.written = 0
        self.failure: UserError | None = None
        self.vanished = False
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._submitted = 0
        self._processed = 0
        self._done = threading.Condition()
        self._identity = _file_identity(store.path)
        self._thread: threading.Thread | None = None
        if background:
            self._thread = threading.Thread(target=self._loop, name="counterbench-store", daemon=True)
            self._thread.start()

    # -- the event-loop side ----------------------------------------------------------------------

    def add(self, row: Row) -> None:
        self._submitted += 1
        if self._thread is None:
            self._write([row])
            self._processed += 1
        else:
            self._queue.put(row)

    def flush(self, *, wait: bool = True) -> None:
        """Return once every row added so far is committed (or kept as unsaved); no-op without ``wait``."""
        if not wait or self._thread is None:
            return
        target = self._submitted
        with self._done:
            while self._processed < target and self._thread.is_alive():
                self._done.wait(0.5)

    def close(self) -> None:
        """Commit everything still queued and stop the thread."""
        if self._thread is not None:
            self.flush(wait=True)
            self._queue.put(_STOP)
            self._thread.join()
            self._thread = None

    # -- the writer thread ------------------------------------------------------------------------

    def _loop(self) -> None:
        get, window, max_rows = self._queue.get, self.window, self.max_rows
        stopping = False
        while not stopping:
            first = get()
            if first is _STOP:
                return
            if window > 0:
                time.sleep(window)
            batch = [first]
            while len(batch) < max_rows:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is _STOP:
                    stopping = True
                    break
                batch.append(item)
            self._write(batch)
            with self._done:
                self._processed += len(batch)
                self._done.notify_all()

    def _write(self, rows: list[Row]) -> None:
        if self.failure is None:
            try:
                self.store.write_responses(rows)
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
        name = f"{self.store.path.name}.unsaved-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.jsonl"
        places = list(folders) if folders is not None else [self.store.path.parent, Path.cwd(),
                                                             Path(tempfile.gettempdir())]
        lines = [json.dumps(dict(zip(RESPONSE_COLUMNS, row, strict=True)), ensure_ascii=False) + "\n"
                 for row in self.unsaved]
        for folder in places:
            path = write_whole(folder / name, lines)
            if path is not None:
                return path
        return None


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
