"""The test record beside every report, and ``counterbench verify`` checking it against a store.

Through the real path: a local OpenAI-compatible server answers a small yes/no study sent by ``audit``
(a subprocess, as a user runs it, with an API key in its environment); the record names the study and its
definition hash, each model's prompt-table hash, runs, endpoint and dates, the options and the software —
never the key — and ``verify`` recomputes it from the store: a match, then a removed answer and a changed
study file are found. Changing one prompt changes the prompt-table hash.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from counterbench.analyses.test_record import prompt_table_hash
from counterbench.testing.fake_openai import FakeOpenAIServer, FaultConfig, run_in_thread
from tests.analyses.shortlist import shortlist_study
from tests.conftest import run_cli

KEY = "sk-test-record-0123456789abcdef"
STUDY = shortlist_study("shortlist_record", 10)


def _reply(system: str, user: str) -> str:
    number = int(user.split("Candidate number ", 1)[1].split(" ", 1)[0])
    return "### yes" if number <= (5 if "a woman" in user else 7) else "### no"


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("record")
    (folder / "study.yaml").write_text(STUDY, encoding="utf-8")
    with run_in_thread(FakeOpenAIServer(FaultConfig(reply=_reply))) as server:
        done = run_cli("audit", "study.yaml", "-m", f"fake=openai-compatible:{server.base_url}:m",
                       "-m", f"fake2=openai-compatible:{server.base_url}:m2", "--store", "cb.db", "--out", "out",
                       "--bootstrap", "100", "--no-progress", cwd=folder,
                       env={"OPENAI_API_KEY": KEY, "OPENAI_COMPATIBLE_API_KEY": KEY})
        assert done.returncode == 0, done.stderr
        (folder / "base_url").write_text(server.base_url, encoding="utf-8")
    return folder


def test_the_record_names_study_prompts_models_runs_options_and_software(audited: Path) -> None:
    record = json.loads((audited / "out" / "test_record.json").read_text(encoding="utf-8"))
    assert record["study"] == "shortlist_record" and len(record["study_hash"]) == 64
    assert set(record["models"]) == {"fake", "fake2"} and record["same_prompts"] is True
    for entry in record["models"].values():
        assert (entry["n_answers"], entry["n_prompts"]) == (20, 20)
        assert len(entry["prompt_table_hash"]) == 64 and entry["run_ids"] == [1]
        assert entry["first_answer"] <= entry["last_answer"]
    assert record["options"]["bootstrap"] == 100 and record["options"]["seed"] == 0
    assert {"counterbench", "python", "numpy", "pandas", "scipy"} <= set(record["software"])
    (run,) = record["runs"]
    base_url = (audited / "base_url").read_text(encoding="utf-8")
    assert run["status"] == "completed" and "audit study.yaml" in run["command"]
    assert run["model_specs"]["fake"].endswith(":m") and base_url.split("//")[1] in json.dumps(run["endpoints"])
    # the prompt-table hash is the store's prompts, recomputed here
    with sqlite3.connect(audited / "cb.db") as conn:
        rows = pd.read_sql("SELECT prompt_id, prompt_hash FROM responses WHERE model = 'fake'", conn)
    assert record["models"]["fake"]["prompt_table_hash"] == prompt_table_hash(rows["prompt_id"], rows["prompt_hash"])
    report = (audited / "out" / "report.html").read_text(encoding="utf-8")
    assert "Test record" in report and record["models"]["fake"]["prompt_table_hash"][:16] in report
    for text in (report, (audited / "out" / "test_record.json").read_text(encoding="utf-8"),
                 (audited / "out" / "analysis" / "summary.json").read_text(encoding="utf-8")):
        assert KEY not in text


def test_verify_finds_the_store_matches_then_a_missing_answer_and_a_changed_study(audited: Path) -> None:
    ok = run_cli("verify", "out/test_record.json", "--store", "cb.db", "--study", "study.yaml", cwd=audited)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "matches store" in ok.stdout and "ok: study shortlist_record: definition hash matches" in ok.stdout
    changed = audited / "changed.yaml"
    changed.write_text(STUDY.replace("labels: [\"yes\", \"no\"]", "labels: [\"yes\", \"no\", \"maybe\"]"),
                       encoding="utf-8")
    study_differs = run_cli("verify", "out/test_record.json", "--store", "cb.db", "--study", str(changed),
                            cwd=audited)
    assert study_differs.returncode == 1 and "DIFFERS: study shortlist_record: its definition differs" in \
        study_differs.stdout
    tampered = audited / "tampered.db"
    tampered.write_bytes((audited / "cb.db").read_bytes())
    with sqlite3.connect(tampered) as conn:
        conn.execute("DELETE FROM responses WHERE id = (SELECT min(id) FROM responses WHERE model = 'fake2')")
    differs = run_cli("verify", "out/test_record.json", "--store", str(tampered), "--study", "study.yaml",
                      cwd=audited)
    assert differs.returncode == 1, differs.stdout + differs.stderr
    assert "DIFFERS: fake2: n_answers is 20 in the record, 19 in the store" in differs.stdout
    assert "ok: fake: 20 answers to 20 prompts" in differs.stdout


def test_verify_refuses_what_is_not_a_record_in_one_line(audited: Path) -> None:
    (audited / "notes.json").write_text('{"hello": 1}', encoding="utf-8")
    for path in ("notes.json", "missing.json"):
        done = run_cli("verify", path, "--store", "cb.db", cwd=audited)
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert done.returncode == 2 and len(lines) == 1, done.stderr
        assert path in lines[0]


def test_changing_one_prompt_changes_the_prompt_table_hash() -> None:
    ids = pd.Series([f"p{i}" for i in range(50)])
    hashes = pd.Series([f"h{i}" for i in range(50)])
    before = prompt_table_hash(ids, hashes)
    assert before == prompt_table_hash(ids[::-1], hashes[::-1])  # order does not matter
    changed = hashes.copy()
    changed.iloc[17] = "h17-edited"
    assert prompt_table_hash(ids, changed) != before
    assert prompt_table_hash(ids[:-1], hashes[:-1]) != before
