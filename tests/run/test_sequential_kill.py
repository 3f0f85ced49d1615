"""kill -9 in the middle of a ``--stop-when decided`` audit (a CLI subprocess against a slow local server): the
resumed run reaches the verdicts, the prompt count and the stored answers of a run never interrupted."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from counterbench.testing._fakecore import FaultConfig, run_in_thread
from counterbench.testing.fake_openai import FakeOpenAIServer
from tests.generated.studygen import generate, reply
from tests.run.conftest import subprocess_env

pytestmark = pytest.mark.slow  # scheduled first (tests/conftest.py)

NUMERIC = ("n_slots", "mean", "cs_low", "cs_high")


def _args(path: Path, url: str, store: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "counterbench.cli", "audit", str(path),
            "--model", f"null=openai-compatible:{url}:gen",
            "--store", str(store), "--out", str(out), "--bootstrap", "20", "--concurrency", "2", "--no-progress",
            "--stop-when", "decided", "--look-every", "40", "--order-seed", "3"]


def _answers(store: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(store) as conn:
        twice = conn.execute("SELECT prompt_id, config_fp, count(*) FROM responses "
                             "GROUP BY model, prompt_id, config_fp HAVING count(*) > 1").fetchall()
        assert not twice, f"answered twice: {twice[:5]}"
        return conn.execute("SELECT model, prompt_id, status, response FROM responses ORDER BY prompt_id").fetchall()


def test_a_killed_sequential_audit_resumes_to_the_uninterrupted_verdicts(tmp_path: Path) -> None:
    study = generate(1038, effect_scale=(1.5, 1.5))
    path = study.write(tmp_path / study.name)
    env = subprocess_env(PYTHONUNBUFFERED="1")
    with run_in_thread(FakeOpenAIServer(FaultConfig(latency_ms=30, reply=reply([study], False)))) as server:
        killed = tmp_path / "killed.db"
        args = _args(path, server.base_url, killed, tmp_path / "out_killed")
        proc = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        for line in proc.stdout:  # kill during the third round, after two looks
            if "look 2 of" in line:
                break
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert proc.returncode == -signal.SIGKILL, "the audit finished before the kill"
        resumed = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        whole = subprocess.run(_args(path, server.base_url, tmp_path / "whole.db", tmp_path / "out_whole"),
                               cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        assert whole.returncode == 0, whole.stderr[-3000:]
    a = pd.read_csv(tmp_path / "out_killed" / "analysis" / "sequential_verdicts.csv", keep_default_na=False)
    b = pd.read_csv(tmp_path / "out_whole" / "analysis" / "sequential_verdicts.csv", keep_default_na=False)
    assert len(a) == len(b) > 0
    assert a["verdict"].tolist() == b["verdict"].tolist()
    assert a["prompts_sent"].tolist() == b["prompts_sent"].tolist()
    assert (a["prompts_sent"] < a["prompts_design"]).all()  # stopped early, after the kill's look
    for column in NUMERIC:
        assert (a[column].astype(float) - b[column].astype(float)).abs().max() <= 1e-9, column
    assert _answers(killed) == _answers(tmp_path / "whole.db")
