"""Opening a store's SQLite file: refusing what is not a counterbench store, switching to WAL, and
creating or migrating the tables (see :mod:`counterbench.run.store` for the layout).

Creating the tables and stamping the file's mark (``PRAGMA application_id``, ``user_version``) is
one write transaction, and a file's identity is read tables-first, so a process opening a new file
while another creates it sees either nothing or a whole store. Foreign, newer and corrupted files
raise :class:`~counterbench.errors.UserError` before anything in them changes.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from counterbench.errors import UserError
from counterbench.run.store_schema import APPLICATION_ID, SCHEMA_STATEMENTS, SCHEMA_VERSION


def check_header(path: Path) -> None:
    try:
        with path.open("rb") as handle:
            header = handle.read(16)
    except OSError as err:
        raise UserError(f"cannot read store {path}: {err.strerror or err}") from None
    if header != b"SQLite format 3\x00":
        raise UserError(
            f"store {path} is not a SQLite database (corrupted, or another kind of file); "
            "it was left untouched — move it aside or choose another --store"
        )


#: how long opening a store waits for another process that holds it (SQLite's busy timeout too)
BUSY_WAIT_S = 30.0


def prepare_when_free(conn: sqlite3.Connection, path: Path, *, check: bool, write: bool) -> None:
    """:func:`_prepare`, tried again while another process holds the file.

    SQLite answers some lock conflicts at once instead of waiting out its busy timeout — switching a
    file to WAL while another process is creating it is one — so two runs creating the same new store
    at the same instant would see "database is locked" without this.
    """
    deadline = time.monotonic() + BUSY_WAIT_S
    pause = 0.005
    while True:
        try:
            _prepare(conn, path, check=check, write=write)
            return
        except sqlite3.OperationalError as err:
            if not _is_busy(err) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.25)


def _is_busy(err: sqlite3.Error) -> bool:
    code = getattr(err, "sqlite_errorcode", None)
    if code is not None:
        return int(code) & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return "locked" in str(err).lower() or "busy" in str(err).lower()


def _prepare(conn: sqlite3.Connection, path: Path, *, check: bool, write: bool) -> None:
    """Check and configure a store; a reader (``write`` off) of a current store writes nothing."""
    has_tables, version = _identity(conn, path)
    conn.execute(f"PRAGMA busy_timeout = {int(BUSY_WAIT_S * 1000)}")
    conn.execute("PRAGMA cache_size = -65536")
    if has_tables and check:  # before WAL mode: a refused file is not changed
        verdict = conn.execute("PRAGMA quick_check(1)").fetchone()[0]
        if verdict != "ok":
            raise UserError(
                f"store {path} is corrupted ({verdict}); it was left untouched — restore a copy, "
                "try `sqlite3 FILE .recover`, or choose another --store"
            )
    mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
    if str(mode).lower() != "wal":
        raise UserError(f"store {path}: cannot switch to WAL mode (is the folder on a network drive?)")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA wal_autocheckpoint = 4000")
    if not write and has_tables and version == SCHEMA_VERSION:
        return
    # One write transaction creates (or migrates) the tables and stamps the file's identity, so a
    # process opening the same new file at the same instant sees either nothing or a whole store.
    conn.execute("BEGIN IMMEDIATE")
    try:
        has_tables, version = _identity(conn, path)  # again, under the write lock: another process may have won
        if has_tables and version < SCHEMA_VERSION:
            _migrate(conn)
        for statement in SCHEMA_STATEMENTS:
            conn.execute(statement)
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.commit()
    except BaseException:
        conn.rollback()
        raise


def _identity(conn: sqlite3.Connection, path: Path) -> tuple[bool, int]:
    """``(has tables, schema version)`` of the open file; refuses a foreign or a newer file."""
    # Tables first: a store's tables and its mark are committed together, so once tables are seen the
    # mark read next is the committed one (read the other way round, a store created between the two
    # reads would look like tables without a mark).
    has_tables = conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0] > 0
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if has_tables and app_id != APPLICATION_ID:
        raise UserError(
            f"{path} is a SQLite database but not a counterbench store; it was left untouched — "
            "choose another --store"
        )
    if version > SCHEMA_VERSION:
        raise UserError(
            f"store {path} was written by a newer counterbench (schema {version}); upgrade counterbench"
        )
    return has_tables, version


def _migrate(conn: sqlite3.Connection) -> None:
    """Bring an older store's tables up to :data:`SCHEMA_VERSION` (columns added; nothing rewritten)."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(responses)")}
    if not columns:
        return
    added = (("answer_logprobs", "TEXT"),  # version 1 -> 2
             ("answer_complete", "INTEGER"), ("answer_mass", "REAL"), ("answer_forced", "INTEGER"))  # 2 -> 3
    for name, sql_type in added:
        if name not in columns:
            conn.execute(f"ALTER TABLE responses ADD COLUMN {name} {sql_type}")
