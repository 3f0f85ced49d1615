"""The recovery file a run writes when the store fails: the generic reader that stores it again."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from counterbench.errors import UserError
from counterbench.run.rescue import import_rescue_file, is_rescue_file, read_rescue_file
from counterbench.run.results import load_results
from counterbench.run.runner import run_prompts
from counterbench.run.store import RESPONSE_COLUMNS, open_store
from counterbench.run.writer import BatchWriter
from tests.run.conftest import cli, make_prompts


def _rescue_of_a_run(tmp_path: Path) -> tuple[Path, Path]:
    """A store with 12 answers, and the recovery file a run would write holding all of them."""
    store = tmp_path / "s.db"
    run_prompts(make_prompts(12), ["sim:fair"], store=store)
    with open_store(store, create=False) as opened:
        writer = BatchWriter(opened)
        writer.unsaved = [tuple(row) for row in opened.query(f"SELECT {', '.join(RESPONSE_COLUMNS)} FROM responses")]
        path = writer.rescue([tmp_path])
    assert path is not None and is_rescue_file(path)
    return store, path


def _forget_answers(store: Path) -> None:
    with sqlite3.connect(store) as conn:
        conn.execute("DELETE FROM responses")


def test_a_recovery_file_puts_back_exactly_the_answers_it_holds(tmp_path: Path) -> None:
    store, rescue = _rescue_of_a_run(tmp_path)
    before = load_results(store).sort_values("prompt_id").reset_index(drop=True)
    _forget_answers(store)
    assert load_results(store).empty
    done = import_rescue_file(rescue, store)
    assert (done.records, done.stored, done.already_stored) == (12, 12, 0)
    assert done.by_model == {"sim:fair": 12}
    assert done.statuses == before["status"].astype(str).value_counts().to_dict()
    after = load_results(store).sort_values("prompt_id").reset_index(drop=True)
    assert after[["prompt_id", "model", "status", "response", "value"]].equals(
        before[["prompt_id", "model", "status", "response", "value"]])
    again = import_rescue_file(rescue, store)
    assert (again.stored, again.already_stored) == (0, 12)


def test_the_import_verb_reads_a_recovery_file_for_a_study_without_an_importer(tmp_path: Path) -> None:
    store, rescue = _rescue_of_a_run(tmp_path)
    _forget_answers(store)
    proc = cli("import", str(rescue), "--store", str(store), "--study", "no_such_importer", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "12 read, 12 stored, 0 already stored" in proc.stdout
    assert len(load_results(store)) == 12


def test_a_file_that_is_not_a_recovery_file_is_refused_with_its_line(tmp_path: Path) -> None:
    bad_json = tmp_path / "s.db.unsaved-20260101-000000-1.jsonl"
    bad_json.write_text('{"prompt_id": "p"}\n{not json\n', encoding="utf-8")
    with pytest.raises(UserError, match=r"unsaved-20260101-000000-1.jsonl line 2: not valid JSON"):
        read_rescue_file(bad_json)
    other = tmp_path / "other.unsaved-20260101-000000-2.jsonl"
    other.write_text('{"id": 1, "response": "x"}\n', encoding="utf-8")
    with pytest.raises(UserError, match="not a recovery file of a run"):
        read_rescue_file(other)
    assert not is_rescue_file(tmp_path / "run_en_model_0.0.jsonl")
