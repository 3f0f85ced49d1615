"""A recovery file's import is a run: each record carries the model string behind its label, the import goes
through run's label-identity check (refused in one line before anything is written, or with
``--same-model``), is recorded with the model strings, redacts API keys, and a refused import of a new store
leaves no file."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from counterbench.run.runner import run_prompts
from counterbench.run.store import RESPONSE_COLUMNS, open_store
from counterbench.run.writer import BatchWriter
from tests.conftest import run_cli_here
from tests.run.conftest import make_prompts

KEY = "sk-test-rescue-0123456789abcdef"


def _rescue(tmp_path: Path, label: str = "a", spec: str = "sim:fair", name: str = "first.db",
            response: str | None = None) -> Path:
    """The recovery file a run of ``label=spec`` on its own store would write, holding its 12 answers."""
    store = tmp_path / name
    run_prompts(make_prompts(12), [f"{label}={spec}"], store=store)
    with open_store(store, create=False) as opened:
        writer = BatchWriter(opened, model_specs={label: spec})
        rows = opened.query(f"SELECT {', '.join(RESPONSE_COLUMNS)} FROM responses")
        at = RESPONSE_COLUMNS.index("response")
        writer.unsaved = [tuple(response if i == at and response else v for i, v in enumerate(row)) for row in rows]
        path = writer.rescue([tmp_path])
    assert path is not None
    store.unlink()
    return path


def _counts(store: Path) -> tuple[int, int]:
    with sqlite3.connect(store) as conn:
        return conn.execute("SELECT (SELECT count(*) FROM responses), (SELECT count(*) FROM runs)").fetchone()


def test_each_record_carries_the_model_string_behind_its_label(tmp_path: Path) -> None:
    rescue = _rescue(tmp_path)
    records = [json.loads(line) for line in rescue.read_text(encoding="utf-8").splitlines()]
    assert len(records) == 12 and {(r["model"], r["model_spec"]) for r in records} == {("a", "sim:fair")}


def test_an_import_into_a_label_held_by_another_model_is_refused(tmp_path: Path) -> None:
    rescue = _rescue(tmp_path)
    store = tmp_path / "s.db"
    run_prompts(make_prompts(12, prefix="q"), ["a=sim:biased"], store=store)
    before = _counts(store)
    done = run_cli_here("import", str(rescue), "--store", str(store), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "counterbench: error: the store holds answers labelled a from model sim:biased, but this recovery file "
        "gives a=sim:fair; a label names one model: use another label or --store, or pass --same-model if it is "
        "the same model"]
    assert _counts(store) == before
    forced = run_cli_here("import", str(rescue), "--store", str(store), "--same-model", cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert _counts(store) == (before[0] + 12, before[1] + 1)


def test_an_import_is_recorded_as_a_run_with_its_model_strings(tmp_path: Path) -> None:
    rescue = _rescue(tmp_path)
    store = tmp_path / "new.db"
    done = run_cli_here("import", str(rescue), "--store", str(store), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(store) as conn:
        runs = conn.execute("SELECT run_id, kind, status, config FROM runs").fetchall()
        run_ids = {r[0] for r in conn.execute("SELECT DISTINCT run_id FROM responses")}
    assert len(runs) == 1 and runs[0][1:3] == ("import", "completed")
    assert json.loads(runs[0][3])["model_specs"] == {"a": "sim:fair"}
    assert run_ids == {runs[0][0]}  # the first store's run is not this store's: the answers count to the import
    again = run_cli_here("run", "--prompts", str(_prompt_file(tmp_path)), "-m", "a=sim:biased", "--store", str(store),
                         cwd=tmp_path)
    assert again.returncode == 2 and "labelled a from model sim:fair" in again.stderr, again.stderr


def _prompt_file(tmp_path: Path) -> Path:
    path = tmp_path / "prompts.jsonl"
    make_prompts(3, prefix="z").to_json(path, orient="records", lines=True)
    return path


def test_records_of_this_stores_run_keep_their_run(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    run_prompts(make_prompts(12), ["a=sim:fair"], store=store)
    with open_store(store, create=False) as opened:
        writer = BatchWriter(opened, model_specs={"a": "sim:fair"})
        writer.unsaved = list(opened.query(f"SELECT {', '.join(RESPONSE_COLUMNS)} FROM responses"))
        rescue = writer.rescue([tmp_path])
    assert rescue is not None
    with sqlite3.connect(store) as conn:
        conn.execute("DELETE FROM responses")
    assert run_cli_here("import", str(rescue), "--store", str(store), cwd=tmp_path).returncode == 0
    with sqlite3.connect(store) as conn:
        assert {r[0] for r in conn.execute("SELECT DISTINCT run_id FROM responses")} == {1}


def test_two_models_under_one_label_leave_no_store(tmp_path: Path) -> None:
    files = [_rescue(tmp_path, name="one.db"), _rescue(tmp_path, spec="sim:biased", name="two.db")]
    listed = sorted(p.name for p in tmp_path.iterdir())
    done = run_cli_here("import", *map(str, files), "--store", str(tmp_path / "s.db"), cwd=tmp_path)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "answers labelled a come from two models (sim:fair and sim:biased)" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == listed  # no store, no -wal/-shm


def test_an_import_redacts_api_keys_like_a_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rescue = _rescue(tmp_path, response=f"(Authorization: Bearer {KEY}) ### 10 LPA")
    assert KEY in rescue.read_text(encoding="utf-8")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    store = tmp_path / "s.db"
    done = run_cli_here("import", str(rescue), "--store", str(store), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert KEY.encode() not in b"".join(p.read_bytes() for p in tmp_path.glob("s.db*"))
    with sqlite3.connect(store) as conn:
        responses = {r[0] for r in conn.execute("SELECT response FROM responses")}
    assert responses == {"(Authorization: Bearer ***) ### 10 LPA"}
