"""The store's SQL view ``answers`` (every response beside its prompt's columns, for Datasette or any SQL
client): created with a new store and when an older one is opened for writing, with no schema version of its
own; a reader never adds it; its rows are the join a user would write."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from counterbench.run.store import open_store
from counterbench.run.store_schema import SCHEMA_VERSION
from tests.conftest import run_cli


def _views(path: Path) -> set[str]:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'view'")}


def test_answers_view_is_the_join_and_needs_no_schema_version(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    done = run_cli("run", "rupeebias", "--model", "sim:biased", "--preset", "quick", "--use-case",
                   "salary_estimation", "--store", str(store), "--no-progress")
    assert done.returncode == 0, done.stderr
    assert "answers" in _views(store)
    with contextlib.closing(sqlite3.connect(store)) as conn:
        joined = conn.execute(
            "SELECT r.id, r.model, p.identifier, p.use_case, r.status, r.value, r.response, p.user FROM responses r "
            "JOIN prompts p USING (prompt_id, prompt_hash) ORDER BY r.id").fetchall()
        viewed = conn.execute("SELECT id, model, identifier, use_case, status, value, response, user FROM answers "
                              "ORDER BY id").fetchall()
        assert viewed == joined and len(viewed) > 10
        conn.execute("DROP VIEW answers")  # a store written before the view existed
        conn.commit()
    with open_store(store, create=False):  # a reader adds nothing
        pass
    assert "answers" not in _views(store)
    with open_store(store) as opened:  # a writer adds the view; the version is unchanged
        assert opened.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert "answers" in _views(store)
