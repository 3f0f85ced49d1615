"""A store that is refused leaves nothing beside it: the ``-wal``/``-shm`` files SQLite creates when it
opens a database in WAL mode are removed again when the open (or the first read) fails.

Only files that did not exist before and that hold no data are removed (an empty ``-wal``; a
``-shm`` is an index SQLite rebuilds), and only after the caller closed its connection, so the
companions of a store another process is using are never touched.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

SIDECARS = ("-wal", "-shm")


def _sidecars(path: Path) -> list[Path]:
    return [Path(f"{path}{suffix}") for suffix in SIDECARS]


@contextlib.contextmanager
def sidecars_removed_on_failure(path: Path | str) -> Iterator[None]:
    """Run the body; if it raises, delete the companions of ``path`` it created (the body closes its connection)."""
    before = {p for p in _sidecars(Path(path)) if p.exists()}
    try:
        yield
    except BaseException:
        remove_new_sidecars(Path(path), before)
        raise


def remove_new_sidecars(path: Path, before: set[Path]) -> None:
    """Delete the companions of ``path`` not in ``before``, unless the ``-wal`` holds data."""
    wal, shm = _sidecars(path)
    with contextlib.suppress(OSError):
        if wal not in before and wal.exists() and wal.stat().st_size > 0:
            return  # frames were written: never throw data away
    for extra in (wal, shm):
        if extra not in before:
            with contextlib.suppress(OSError):
                extra.unlink()


def existing_sidecars(path: Path | str) -> set[Path]:
    """The companions of ``path`` that exist now."""
    return {p for p in _sidecars(Path(path)) if p.exists()}


def tidy_after_readonly(path: Path | str, before: set[Path]) -> None:
    """After a read-only connection closed: let SQLite remove the ``-wal``/``-shm`` it created.

    A read-only connection never removes them itself, so one ordinary connection opens, reads and
    closes: SQLite removes a WAL store's companions when its last connection closes (never while
    another process — a run in progress — has the store open). Nothing happens when companions were
    there before (``before``) or none was created.
    """
    import sqlite3

    if before or not Path(f"{path}-shm").exists():
        return
    with contextlib.suppress(sqlite3.Error, OSError):
        last = sqlite3.connect(str(path), timeout=1.0)
        try:
            last.execute("SELECT count(*) FROM sqlite_master").fetchone()
        finally:
            last.close()
