"""Model labels: ``--model LABEL=SPEC`` names the model everywhere, the spec stays recorded, a labelled
model answers exactly as the unlabelled one, and its price is looked up by its spec."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from counterbench.errors import UserError
from counterbench.models.labels import LabelledBackend, model_spec, split_label
from counterbench.models.registry import create_backend
from tests.conftest import run_cli


@pytest.mark.parametrize("text, expected", [
    ("gpt=openai:gpt-4o-mini", ("gpt", "openai:gpt-4o-mini")),
    ("qwen 7b = vllm:http://h:8000/v1:Qwen/Qwen2.5-7B", ("qwen 7b", "vllm:http://h:8000/v1:Qwen/Qwen2.5-7B")),
    ("openai:model=with-equals", (None, "openai:model=with-equals")),
    ("sim:biased", (None, "sim:biased")),
])
def test_split_label(text: str, expected: tuple[str | None, str]) -> None:
    assert split_label(text) == expected


@pytest.mark.parametrize("text", ["=sim:fair", "tiny="])
def test_bad_labels_are_user_errors(text: str) -> None:
    with pytest.raises(UserError):
        split_label(text)


def test_labelled_backend_keeps_the_spec() -> None:
    backend = create_backend("fair=sim:fair")
    assert isinstance(backend, LabelledBackend) and backend.name == "fair" and backend.simulated
    assert model_spec(backend) == "sim:fair" and model_spec(create_backend("sim:fair")) == "sim:fair"


def test_labels_name_the_model_in_store_analysis_and_report(tmp_path: Path) -> None:
    store = tmp_path / "l.db"
    done = run_cli("run", "rupeebias", "--model", "B=sim:biased", "--model", "sim:biased", "--preset", "quick",
                   "--use-case", "salary_estimation", "--store", str(store), "--no-progress")
    assert done.returncode == 0, done.stderr
    with contextlib.closing(sqlite3.connect(store)) as conn:
        answers = pd.read_sql_query("SELECT model, prompt_id, response FROM responses", conn)
        (config,), = conn.execute("SELECT config FROM runs").fetchall()
    assert set(answers["model"]) == {"B", "sim:biased"}
    wide = answers.pivot(index="prompt_id", columns="model", values="response")
    assert (wide["B"] == wide["sim:biased"]).all(), "a label must not change the answers"
    assert json.loads(config)["model_specs"] == {"B": "sim:biased", "sim:biased": "sim:biased"}
    report = tmp_path / "r.html"
    done = run_cli("report", "--store", str(store), "--out", str(report), "--bootstrap", "20")
    assert done.returncode == 0, done.stderr
    html = report.read_text()
    assert "<span>B</span>" in html


def test_price_is_looked_up_by_spec(tmp_path: Path) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text('prices:\n  "sim:biased": {input: 1000, output: 1000}\n')
    done = run_cli("run", "rupeebias", "--model", "B=sim:biased", "--preset", "quick", "--use-case",
                   "salary_estimation", "--store", str(tmp_path / "p.db"), "--prices", str(prices), "--max-cost",
                   "100", "--no-progress")
    assert done.returncode == 0, done.stderr
    with contextlib.closing(sqlite3.connect(tmp_path / "p.db")) as conn:
        (cost,), = conn.execute("SELECT sum(cost_usd) FROM responses").fetchall()
    assert cost and cost > 0
