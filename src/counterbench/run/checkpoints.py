"""Checkpoint the store's write-ahead log on a thread of its own while a run writes to it.

SQLite in WAL mode copies the log back into the database file at a *checkpoint*, and with
``synchronous=NORMAL`` that is the moment it flushes to disk (``fsync``): tens of milliseconds for a few
megabytes of log on an ordinary disk. Left to SQLite, the checkpoint runs inside the commit that fills
the log — on the event loop, holding back every reply that waits for its commit. During a run the
writing connection checkpoints never (``wal_autocheckpoint = 0``); this thread runs a ``PASSIVE``
checkpoint every ``interval_s`` through its own connection instead, which never blocks a writer (the
loop keeps committing to the log meanwhile) and holds the GIL only around the call. After the run the
store's own setting comes back.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from pathlib import Path
from types import TracebackType

#: seconds between two checkpoints: a smaller log per flush, still few flushes
DEFAULT_INTERVAL_S = 0.5


class WalCheckpointer:
    """``with WalCheckpointer(store.conn, store.path):`` — checkpoints off the loop for the block."""

    def __init__(self, conn: sqlite3.Connection, path: Path, interval_s: float = DEFAULT_INTERVAL_S) -> None:
        self.conn = conn
        self.path = path
        self.interval_s = interval_s
        self.checkpoints = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pages: int | None = None

    def __enter__(self) -> WalCheckpointer:
        try:
            # mode=rw: never creates a file (a store deleted meanwhile stays deleted)
            own = sqlite3.connect(f"file:{self.path}?mode=rw", uri=True, check_same_thread=False, timeout=0.0)
        except sqlite3.Error:
            return self  # SQLite's own checkpoints stay on
        with contextlib.suppress(sqlite3.Error):
            self._pages = int(self.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0])
            self.conn.execute("PRAGMA wal_autocheckpoint = 0")
        self._thread = threading.Thread(target=self._run, args=(own,), name="counterbench-checkpoint", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._pages is not None:
            with contextlib.suppress(sqlite3.Error):
                self.conn.execute(f"PRAGMA wal_autocheckpoint = {self._pages}")

    def _run(self, own: sqlite3.Connection) -> None:
        try:
            while not self._stop.wait(self.interval_s):
                with contextlib.suppress(sqlite3.Error):
                    own.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                    self.checkpoints += 1
        finally:
            with contextlib.suppress(sqlite3.Error):
                own.close()
