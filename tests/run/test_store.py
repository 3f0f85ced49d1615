"""The SQLite store: schema, uniqueness, refusing bad files without touching them."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from counterbench.errors import UserError
from counterbench.run.store import INSERT_RESPONSE_SQL, RESPONSE_COLUMNS, open_store


def _row(status: str, text: str, **over: object) -> tuple[object, ...]:
    base = dict.fromkeys(RESPONSE_COLUMNS)
    base.update(prompt_id="a", prompt_hash="h", model="m", config_fp="c", request_fp="r", simulated=0,
                status=status, response=text, attempts=1, cached=0)
    base.update(over)
    return tuple(base[c] for c in RESPONSE_COLUMNS)


def test_new_store_is_wal_and_marked(tmp_path: Path) -> None:
    with open_store(tmp_path / "s.db") as store:
        assert store.query("PRAGMA journal_mode")[0][0] == "wal"
        tables = {r[0] for r in store.query("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert {"runs", "prompts", "responses", "configs"} <= tables
    with open_store(tmp_path / "s.db", create=False) as store:  # reopens
        assert store.query("SELECT count(*) FROM responses")[0][0] == 0


def test_parent_folders_are_created(tmp_path: Path) -> None:
    with open_store(tmp_path / "a" / "b" / "s.db") as store:
        assert store.path.exists()


def test_one_response_per_prompt_model_config_and_finished_rows_are_never_overwritten(tmp_path: Path) -> None:
    with open_store(tmp_path / "s.db") as store:
        store.write_responses([_row("error", None, error="boom")])
        store.write_responses([_row("ok", "### 5 INR")])  # an error row may be replaced ...
        store.write_responses([_row("ok", "### 9 INR")])  # ... a finished one never
        store.write_responses([_row("error", None, error="late")])
        rows = store.query("SELECT status, response, attempts FROM responses")
        assert rows == [("ok", "### 5 INR", 2)]
        with pytest.raises(sqlite3.IntegrityError):
            store.conn.execute(INSERT_RESPONSE_SQL.split(" ON CONFLICT")[0], _row("ok", "x"))


def test_missing_store_without_create(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="does not exist"):
        open_store(tmp_path / "nope.db", create=False)


def test_garbage_file_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    payload = b"this is not a database\n" * 100
    path.write_bytes(payload)
    with pytest.raises(UserError, match="not a SQLite database"):
        open_store(path)
    assert path.read_bytes() == payload


def test_other_sqlite_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(UserError, match="not a counterbench store"):
        open_store(path)
    assert path.read_bytes() == before


def test_corrupted_pages_are_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with open_store(path) as store:
        store.write_responses([_row("ok", f"### {i} INR", prompt_id=f"p{i}") for i in range(2000)])
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(path.read_bytes())
    assert len(data) > 8192
    for offset in range(4096 + 100, len(data), 997):  # scribble over every page but the header page
        data[offset : offset + 16] = b"\xff" * 16
    path.write_bytes(bytes(data))
    with pytest.raises(UserError, match=r"corrupt|malformed"):
        open_store(path)
    assert path.read_bytes() == bytes(data)


@pytest.mark.parametrize("kind", ["under_a_file", "folder"])
def test_unwritable_locations(tmp_path: Path, kind: str) -> None:
    blocker = tmp_path / "plain_file"
    blocker.write_text("x")
    target = blocker / "s.db" if kind == "under_a_file" else tmp_path
    with pytest.raises(UserError) as info:
        open_store(target)
    assert "\n" not in str(info.value)


def test_live_run_of_another_process_blocks_a_second_one(tmp_path: Path) -> None:
    import subprocess
    import sys

    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with open_store(tmp_path / "s.db") as store:
            store.conn.execute("INSERT INTO runs (kind, started_at, status, pid, host) VALUES "
                               "('run', 0, 'running', ?, ?)", (sleeper.pid, __import__("socket").gethostname()))
            store.conn.commit()
            with pytest.raises(UserError, match="in use by another counterbench process"):
                store.start_run("run", "x", {}, "0")
    finally:
        sleeper.kill()
        sleeper.wait()
    with open_store(tmp_path / "s.db") as store:  # a dead run is marked killed, a new one starts
        run_id = store.start_run("run", "x", {}, "0")
        assert dict(store.query("SELECT run_id, status FROM runs")) == {1: "killed", run_id: "running"}


class _WatchedStatements(tuple):  # type: ignore[type-arg]
    """The schema statements; after each one has run, ``watch`` looks at the file from another connection."""

    watch: object = None

    def __iter__(self):  # type: ignore[no-untyped-def]
        for statement in tuple.__iter__(self):
            yield statement
            self.watch()  # type: ignore[operator]


def test_another_process_never_sees_a_half_created_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Creating a store is one transaction: tables without the counterbench mark are never visible.

    (A second run opening the same new file at the same instant used to find tables but no mark yet,
    and refused the file as "not a counterbench store".)
    """
    import counterbench.run.store_file as store_file
    from counterbench.run.store_schema import APPLICATION_ID, SCHEMA_STATEMENTS

    path = tmp_path / "s.db"
    seen: list[tuple[int, int]] = []

    def watch() -> None:
        other = sqlite3.connect(str(path), timeout=0)
        try:
            tables = other.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0]
            seen.append((tables, other.execute("PRAGMA application_id").fetchone()[0]))
        finally:
            other.close()

    statements = _WatchedStatements(SCHEMA_STATEMENTS)
    statements.watch = watch
    monkeypatch.setattr(store_file, "SCHEMA_STATEMENTS", statements)
    open_store(path).close()
    assert len(seen) == len(SCHEMA_STATEMENTS) >= 4
    assert all(tables == 0 or app_id == APPLICATION_ID for tables, app_id in seen), seen
    watch()
    # runs, configs, prompts, responses, sqlite_sequence, batch_jobs, batch_requests — once committed
    assert seen[-1] == (7, APPLICATION_ID)


def _open_at_the_same_instant(path: str, barrier: object, results: object) -> None:
    barrier.wait()  # type: ignore[attr-defined]
    try:
        open_store(path).close()
        results.put("ok")  # type: ignore[attr-defined]
    except UserError as err:
        results.put(f"refused: {err}")  # type: ignore[attr-defined]


def test_processes_creating_one_store_at_the_same_instant_all_open_it(tmp_path: Path) -> None:
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    for trial in range(8):
        path = str(tmp_path / f"s{trial}.db")
        barrier, results = ctx.Barrier(4), ctx.Queue()
        procs = [ctx.Process(target=_open_at_the_same_instant, args=(path, barrier, results)) for _ in range(4)]
        for proc in procs:
            proc.start()
        for proc in procs:
            proc.join(timeout=60)
        assert [results.get(timeout=5) for _ in procs] == ["ok"] * 4
