"""The SQLite store: prompts, runs and one response per prompt × model × generation config.

Layout (schema version 3, ``PRAGMA application_id`` marks the file as a counterbench store):

* ``prompts`` — every prompt row that was ever run or imported, keyed by ``(prompt_id,
  prompt_hash)`` (``prompt_hash`` = hash of system + user text), with the study's design columns as
  JSON. Keying on the text too lets a store hold, say, the release's prompts for imported models
  and the paper's prompts for new runs without one overwriting the other.
* ``configs`` — generation configs by fingerprint.
* ``runs`` — one row per ``counterbench run``/``import``: command, times, version, settings, outcome.
* ``responses`` — ``UNIQUE(prompt_id, model, config_fp)``. A finished row (status ``ok``,
  ``refused`` or ``unparseable``) is never overwritten by a run; only rows without a finished
  answer (``error``, ``truncated``, ``filtered``, ``empty``) can be replaced, and only when the user
  asks for it (``--retry-errors``).

A run takes the store with one ``BEGIN IMMEDIATE`` transaction that checks for a live run and
records its own (:meth:`Store.start_run`), so two runs started at the same instant cannot both
pass. Creating a store is one transaction too (tables and the file's mark together), so two runs
creating the same new file at once both open it and one of them gets it. Each run records the
endpoint (base URL, never a key) of every model in its settings.

The file is opened in WAL mode with ``synchronous=NORMAL``: a committed transaction survives a
killed process. A file that is not a SQLite database, or not a counterbench store, raises
:class:`~counterbench.errors.UserError` and is left untouched.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import sqlite3
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from counterbench.columns import BASE_COLUMNS, PARSED_COLUMNS, USAGE_COLUMNS
from counterbench.errors import UserError
from counterbench.models.base import FINISHED_STATUSES, RETRYABLE_STATUSES
from counterbench.run.sidecars import sidecars_removed_on_failure
from counterbench.run.store_file import BUSY_WAIT_S, check_header, prepare_when_free

DEFAULT_STORE = "counterbench.db"

#: the reading of a label or choice answer's log-probabilities (:func:`counterbench.outcomes.logprobs.answer_columns`)
READING_COLUMNS: tuple[str, ...] = ("answer_logprobs", "answer_complete", "answer_mass", "answer_forced")

#: prompt-table columns kept as real columns; the rest of a prompt row goes to ``design`` (JSON)
PROMPT_COLUMNS: tuple[str, ...] = tuple(c for c in BASE_COLUMNS if c != "prompt_id")

#: a prompt record's columns, in order
PROMPT_RECORD_COLUMNS: tuple[str, ...] = ("prompt_id", "prompt_hash", *PROMPT_COLUMNS, "design")

#: response columns in insert order (see :data:`INSERT_RESPONSE_SQL`)
RESPONSE_COLUMNS: tuple[str, ...] = (
    "prompt_id", "prompt_hash", "model", "config_fp", "request_fp", "simulated", "status", "response",
    "finish_reason", *PARSED_COLUMNS, *USAGE_COLUMNS, "attempts", "error", "cached", "model_reported", "source",
    "started_at", "finished_at", "run_id", *READING_COLUMNS,
)


_UPDATABLE = [c for c in RESPONSE_COLUMNS if c not in ("prompt_id", "model", "config_fp", "attempts")]
INSERT_RESPONSE_SQL = (
    f"INSERT INTO responses ({', '.join(RESPONSE_COLUMNS)}) VALUES ({', '.join('?' * len(RESPONSE_COLUMNS))}) "
    "ON CONFLICT (model, config_fp, prompt_id) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in _UPDATABLE)
    + ", attempts = responses.attempts + excluded.attempts WHERE responses.status IN ("
    + ", ".join(f"'{status}'" for status in RETRYABLE_STATUSES)
    + ")"
)
_INSERT_PROMPT_SQL = (f"INSERT OR IGNORE INTO prompts ({', '.join(PROMPT_RECORD_COLUMNS)}) "
                      f"VALUES ({', '.join('?' * len(PROMPT_RECORD_COLUMNS))})")
_FINISHED_SQL = "(" + ", ".join(f"'{status}'" for status in FINISHED_STATUSES) + ")"


def text_hash(*parts: str | None) -> str:
    """A stable sha256 hex digest of ``parts`` (``None`` and ``""`` hash alike)."""
    return hashlib.sha256("\x00".join([p or "" for p in parts]).encode("utf-8")).hexdigest()


def prompt_hash(system: str | None, user: str | None) -> str:
    return text_hash(system, user)[:16]


def request_fingerprint(model: str, system: str | None, user: str | None, config_fp: str) -> str:
    """sha256 (128 bits, hex) of model + system + user + generation config: equal fingerprints, equal requests."""
    return text_hash(model, system, user, config_fp)[:32]


class Store:
    """An open store. Use :func:`open_store`; close with :meth:`close` (or as a context manager)."""

    def __init__(self, path: Path, conn: sqlite3.Connection) -> None:
        self.path = path
        self.conn = conn

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self.conn.close()

    # -- writes -------------------------------------------------------------------------------

    def execute_write(self, sql: str, rows: Sequence[Sequence[Any]] | None = None) -> None:
        """Run one write statement (``executemany`` when ``rows`` is given) and commit."""
        try:
            with self.conn:
                if rows is None:
                    self.conn.execute(sql)
                else:
                    self.conn.executemany(sql, rows)
        except sqlite3.Error as err:
            raise _store_error(self.path, err) from None

    def write_responses(self, rows: Sequence[Sequence[Any]], prompts: Sequence[tuple[Any, ...]] = ()) -> None:
        """Insert response rows (tuples in :data:`RESPONSE_COLUMNS` order) in one transaction, with the
        ``prompts`` rows (tuples in :data:`PROMPT_RECORD_COLUMNS` order) they answer, if not stored yet."""
        if not prompts:
            if rows:
                self.execute_write(INSERT_RESPONSE_SQL, rows)
            return
        try:
            with self.conn:
                self.conn.executemany(_INSERT_PROMPT_SQL, prompts)
                self.conn.executemany(INSERT_RESPONSE_SQL, rows)
        except sqlite3.Error as err:
            raise _store_error(self.path, err) from None

    def write_new_responses(self, rows: Sequence[Sequence[Any]]) -> int:
        """:meth:`write_responses`, returning how many rows were new (the rest were already stored)."""
        before = int(self.query("SELECT total_changes()")[0][0])
        self.write_responses(rows)
        return int(self.query("SELECT total_changes()")[0][0]) - before

    def save_config(self, config_fp: str, config: dict[str, Any]) -> None:
        blob = json.dumps(config, sort_keys=True)
        self.execute_write_params("INSERT OR IGNORE INTO configs (config_fp, config) VALUES (?, ?)", (config_fp, blob))

    def execute_write_params(self, sql: str, params: Sequence[Any]) -> sqlite3.Cursor:
        try:
            with self.conn:
                return self.conn.execute(sql, params)
        except sqlite3.Error as err:
            raise _store_error(self.path, err) from None

    def save_prompts(self, records: Iterable[dict[str, Any] | tuple[Any, ...]]) -> None:
        """Insert prompt rows: dicts, or tuples in :data:`PROMPT_RECORD_COLUMNS` order."""
        cols = PROMPT_RECORD_COLUMNS
        rows = [rec if isinstance(rec, tuple) else tuple(rec.get(c) for c in cols) for rec in records]
        self.execute_write(_INSERT_PROMPT_SQL, rows)

    def start_run(self, kind: str, command: str, config: dict[str, Any], version: str) -> int:
        """Record a new run; refuse when a live process on this host is already running on the store.

        The check and the insert are one ``BEGIN IMMEDIATE`` transaction: of two runs started at the
        same instant, the second waits for the first's insert and then sees it.
        """
        host = socket.gethostname()
        conn = self.conn
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                for run_id, pid, run_host in conn.execute(
                    "SELECT run_id, pid, host FROM runs WHERE status = 'running'"
                ).fetchall():
                    if run_host == host and pid and _pid_alive(int(pid)) and int(pid) != os.getpid():
                        raise UserError(
                            f"store {self.path} is in use by another counterbench process (pid {pid}, run {run_id}); "
                            "wait for it to finish or use another --store"
                        )
                    conn.execute("UPDATE runs SET status = 'killed' WHERE run_id = ?", (run_id,))
                cur = conn.execute(
                    "INSERT INTO runs (kind, command, started_at, version, config, status, pid, host) "
                    "VALUES (?, ?, ?, ?, ?, 'running', ?, ?)",
                    (kind, command, time.time(), version, json.dumps(config, sort_keys=True, default=str),
                     os.getpid(), host),
                )
                conn.commit()
            except BaseException:
                conn.rollback()
                raise
        except sqlite3.Error as err:
            raise _store_error(self.path, err) from None
        return int(cur.lastrowid or 0)

    def endpoints_of(self, model: str) -> set[str | None]:
        """The endpoints (base URLs) earlier runs recorded for ``model``'s stored responses."""
        return self.recorded_for(model, "endpoints")

    def recorded_for(self, model: str, key: str) -> set[str | None]:
        """What earlier runs recorded under ``key`` (``endpoints``, ``model_specs``) for ``model``'s answers."""
        rows = self.query(
            "SELECT config FROM runs WHERE run_id IN (SELECT DISTINCT run_id FROM responses WHERE model = ?)",
            (model,),
        )
        found: set[str | None] = set()
        for (blob,) in rows:
            try:
                recorded = json.loads(blob or "{}").get(key)
            except (ValueError, AttributeError):
                continue
            if isinstance(recorded, dict) and model in recorded:
                found.add(recorded[model])
        return found

    def finish_run(self, run_id: int, status: str, counts: dict[str, float]) -> None:
        self.execute_write_params(
            "UPDATE runs SET ended_at = ?, status = ?, sent = ?, cached = ?, errors = ?, retries = ?, cost_usd = ? "
            "WHERE run_id = ?",
            (
                time.time(),
                status,
                int(counts.get("sent", 0)),
                int(counts.get("cached", 0)),
                int(counts.get("errors", 0)),
                int(counts.get("retries", 0)),
                float(counts.get("cost_usd", 0.0)),
                run_id,
            ),
        )

    # -- reads --------------------------------------------------------------------------------

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            return self.conn.execute(sql, params).fetchall()
        except sqlite3.Error as err:
            raise _store_error(self.path, err) from None

    def prompt_hashes(self) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for pid, phash in self.query("SELECT prompt_id, prompt_hash FROM prompts"):
            out.setdefault(pid, set()).add(phash)
        return out

    def prompt_studies(self) -> dict[str, set[str]]:
        """``prompt_id -> the studies whose prompts carry that id`` (prompts with a study only)."""
        out: dict[str, set[str]] = {}
        for pid, study in self.query("SELECT DISTINCT prompt_id, study FROM prompts WHERE study IS NOT NULL"):
            out.setdefault(pid, set()).add(str(study))
        return out

    def existing_responses(self, model: str, config_fp: str) -> dict[str, tuple[str, str]]:
        """``prompt_id -> (status, prompt_hash)`` for one model and config."""
        rows = self.query(
            "SELECT prompt_id, status, prompt_hash FROM responses WHERE model = ? AND config_fp = ?",
            (model, config_fp),
        )
        return {pid: (status, phash) for pid, status, phash in rows}

    def finished_by_request(self, model: str, fingerprints: Iterable[str]) -> dict[str, tuple[Any, ...]]:
        """Finished responses with these request fingerprints: ``request_fp -> stored fields``."""
        wanted = list(set(fingerprints))
        out: dict[str, tuple[Any, ...]] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            rows = self.query(
                "SELECT request_fp, response, finish_reason, input_tokens, output_tokens, latency_ms, "
                f"model_reported, simulated, {', '.join(READING_COLUMNS)} FROM responses "
                f"WHERE model = ? AND status IN {_FINISHED_SQL} AND request_fp IN ({', '.join('?' * len(chunk))})",
                (model, *chunk),
            )
            for row in rows:
                out.setdefault(row[0], row[1:])
        return out


def open_store(path: Path | str | None = None, *, create: bool = True, check: bool | None = None) -> Store:
    """Open (and create or migrate) a store; every failure is a one-line :class:`UserError`.

    ``check`` runs SQLite's ``quick_check`` first (default: when opening for writing, i.e. ``create``);
    readers skip it, since a damaged page still fails loudly when it is read.
    """
    store_path = Path(path if path is not None else DEFAULT_STORE)
    if store_path.is_dir():
        raise UserError(f"store {store_path} is a folder; give a file path, e.g. {store_path / DEFAULT_STORE}")
    exists = store_path.exists()
    if not exists:
        if not create:
            raise UserError(f"store {store_path} does not exist (run `counterbench run` or `import` first)")
        try:
            store_path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise UserError(f"cannot create store {store_path}: {err.strerror or err}") from None
    elif exists and store_path.stat().st_size > 0:
        check_header(store_path)
    with sidecars_removed_on_failure(store_path):  # a refused store gets no -wal/-shm beside it
        try:
            conn = sqlite3.connect(
                str(store_path), timeout=BUSY_WAIT_S, isolation_level="DEFERRED", check_same_thread=False
            )
        except sqlite3.Error as err:
            raise _store_error(store_path, err) from None
        store = Store(store_path, conn)
        try:
            prepare_when_free(conn, store_path, check=create if check is None else check, write=create)
        except sqlite3.Error as err:
            store.close()
            raise _store_error(store_path, err) from None
        except UserError:
            store.close()
            raise
    return store


def _store_error(path: Path, err: sqlite3.Error) -> UserError:
    text = str(err) or type(err).__name__
    lowered = text.lower()
    if "readonly" in lowered or "unable to open" in lowered or "disk i/o" in lowered:
        return UserError(f"cannot write store {path}: {text}; check the path and its permissions")
    if "malformed" in lowered or "not a database" in lowered or "encrypted" in lowered:
        return UserError(f"store {path} is corrupted ({text}); it was left untouched — choose another --store")
    if "locked" in lowered or "busy" in lowered:
        return UserError(f"store {path} is locked by another process ({text}); try again when it is done")
    if "full" in lowered:
        return UserError(f"cannot write store {path}: {text}; free some disk space and rerun to resume")
    return UserError(f"store {path}: {text}")


def remove_store_files(path: Path) -> None:
    """Delete a store and its ``-wal``/``-shm`` companions (a store this run created and did not use)."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(OSError):
            Path(f"{path}{suffix}").unlink()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True

