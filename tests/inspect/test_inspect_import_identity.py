"""An Inspect import is a run: it records the model string behind its label, goes through the same
label-identity check as ``run`` (a label held by another model is refused in one line, exit 2, nothing
written), redacts API keys as the run path does, and a refused import of a new store leaves no file."""

from __future__ import annotations

import importlib.util
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import REPO, run_cli_here

if importlib.util.find_spec("inspect_ai") is None:  # found, not imported: collection stays light
    pytest.skip("needs inspect-ai: pip install 'counterbench[inspect]'", allow_module_level=True)
KEY = "sk-planted-4f9a2c71e0"


def write_log(path: Path, model: str = "openai/gpt-4o-mini", n: int = 3, use_case: bool = True) -> Path:
    """A small Inspect eval log of a counterbench-shaped task, written by Inspect's own writer; each answer
    echoes the request's Authorization header, as a server that echoes headers would."""
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalSample, EvalSpec, write_eval_log
    from inspect_ai.model import (
        ChatCompletionChoice,
        ChatMessageAssistant,
        ChatMessageSystem,
        ChatMessageUser,
        ModelOutput,
    )

    ids = [f"salary_estimation_en_{i:05d}" for i in range(n)]
    spec = EvalSpec(created="2026-01-01T00:00:00+00:00", task="counterbench/rent", model=model, config=EvalConfig(),
                    dataset=EvalDataset(name="t", samples=n, sample_ids=list(ids)))
    samples = [EvalSample(
        id=pid, epoch=1, target="", input=[ChatMessageSystem(content="sys"), ChatMessageUser(content=f"user {i}")],
        metadata={**({"use_case": "salary_estimation"} if use_case else {}), "identifier": "Hindu",
                  "answer_type": "inr_annual"},
        output=ModelOutput(model=model, choices=[ChatCompletionChoice(
            message=ChatMessageAssistant(content=f"(Authorization: Bearer {KEY}) ### {10 + i} LPA"),
            stop_reason="stop")]),
    ) for i, pid in enumerate(ids)]
    write_eval_log(EvalLog(eval=spec, samples=samples, status="success"), str(path))
    return path


def test_an_import_into_a_label_held_by_another_model_is_refused(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    ran = run_cli_here("run", str(REPO / "examples" / "rent_quote.yaml"), "--preset", "quick", "-m", "a=sim:fair",
                       "--store", str(store))
    assert ran.returncode == 0, ran.stderr
    with sqlite3.connect(store) as conn:
        before = conn.execute("SELECT (SELECT count(*) FROM responses), (SELECT count(*) FROM runs)").fetchone()
    log = write_log(tmp_path / "a.eval")
    done = run_cli_here("import", "--inspect-log", str(log), "--store", str(store), "--label", "a")
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "counterbench: error: the store holds answers labelled a from model sim:fair, but this import gives "
        "a=openai/gpt-4o-mini; a label names one model: use another label or --store, or pass --same-model if it "
        "is the same model"]
    with sqlite3.connect(store) as conn:
        assert conn.execute("SELECT (SELECT count(*) FROM responses), (SELECT count(*) FROM runs)").fetchone() == before
    # under its own label it goes in, and records the model string behind the label
    done = run_cli_here("import", "--inspect-log", str(log), "--store", str(store), "--label", "b")
    assert done.returncode == 0, done.stderr
    # and a run may not then reuse that label for another model
    again = run_cli_here("run", str(REPO / "examples" / "rent_quote.yaml"), "--preset", "quick", "-m", "b=sim:fair",
                         "--store", str(store))
    assert again.returncode == 2 and "labelled b from model openai/gpt-4o-mini" in again.stderr, again.stderr


def test_two_logs_of_two_models_under_one_label_are_refused(tmp_path: Path) -> None:
    logs = [write_log(tmp_path / "a.eval"), write_log(tmp_path / "b.eval", model="openai/gpt-4o")]
    store = tmp_path / "s.db"
    done = run_cli_here("import", "--inspect-log", str(logs[0]), "--inspect-log", str(logs[1]), "--store",
                        str(store), "--label", "x")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "the logs hold answers of two models" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.eval", "b.eval"]  # no store, no -wal/-shm


def test_an_import_redacts_api_keys_like_a_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    store = tmp_path / "s.db"
    done = run_cli_here("import", "--inspect-log", str(write_log(tmp_path / "a.eval")), "--store", str(store))
    assert done.returncode == 0, done.stderr
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("s.db*"))
    assert KEY.encode() not in raw
    with sqlite3.connect(store) as conn:
        rows = conn.execute("SELECT response, status, value FROM responses ORDER BY prompt_id").fetchall()
    assert rows[0] == ("(Authorization: Bearer ***) ### 10 LPA", "ok", 1_000_000.0)
    out = tmp_path / "export.csv"
    exported = run_cli_here("export", "--store", str(store), "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    assert "Bearer ***" in out.read_text() and KEY not in out.read_text()


def test_a_log_refused_after_the_store_opened_leaves_no_store(tmp_path: Path) -> None:
    log = write_log(tmp_path / "a.eval", use_case=False)
    done = run_cli_here("import", "--inspect-log", str(log), "--store", str(tmp_path / "s.db"))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "has no use_case in its metadata" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.eval"]
