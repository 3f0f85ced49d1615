"""Reading the store back: load_results, exports in three formats, re-parsing without a model."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from counterbench.errors import UserError
from counterbench.run import run_prompts
from counterbench.run.results import RESULT_COLUMNS, export_results, load_results, reparse_store
from counterbench.run.store import open_store
from tests.run.conftest import make_prompts

REQUIRED_EXPORT = (
    "prompt_id", "model", "use_case", "language", "axis", "identifier", "profile_id", "question_variant", "variant",
    "status", "value", "unit", "response", "finish_reason", "input_tokens", "output_tokens", "cost_usd",
    "latency_ms", "attempts", "error", "simulated",
)


@pytest.fixture
def filled_store(tmp_path: Path) -> Path:
    store = tmp_path / "s.db"
    run_prompts(make_prompts(20), ["sim:fair", "sim:biased"], store=store)
    return store


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".jsonl"])
def test_export_formats_have_the_promised_columns(filled_store: Path, tmp_path: Path, suffix: str) -> None:
    out = tmp_path / f"results{suffix}"
    path, rows = export_results(filled_store, out)
    assert path == out and rows == 40
    if suffix == ".parquet":
        frame = pd.read_parquet(out)
    elif suffix == ".csv":
        frame = pd.read_csv(out)
    else:
        frame = pd.read_json(out, lines=True)
    assert len(frame) == 40
    missing = [c for c in REQUIRED_EXPORT if c not in frame.columns]
    assert not missing
    assert "cgpa" in frame.columns  # design columns
    assert list(tmp_path.glob(".results*.tmp")) == []  # atomic write leaves nothing behind


def test_export_via_cli_and_bad_suffix(filled_store: Path, tmp_path: Path) -> None:
    with pytest.raises(UserError, match="use a file ending"):
        export_results(filled_store, tmp_path / "x.xlsx")
    with pytest.raises(UserError, match="does not exist"):
        export_results(tmp_path / "missing.db", tmp_path / "x.csv")
    assert not (tmp_path / "missing.db").exists()


def test_load_results_filters_models_and_keeps_column_order(filled_store: Path) -> None:
    frame = load_results(filled_store, models=["sim:biased"])
    assert set(frame["model"]) == {"sim:biased"} and len(frame) == 20
    assert tuple(frame.columns[: len(RESULT_COLUMNS)]) == RESULT_COLUMNS
    with pytest.raises(UserError, match="no responses of model"):
        load_results(filled_store, models=["sim:nope"])
    with_text = load_results(filled_store, include_prompt_text=True)
    assert with_text["user"].str.contains("CGPA").all()


def test_reparse_store_changes_profile_without_calling_a_model(filled_store: Path) -> None:
    with open_store(filled_store) as store:
        store.execute_write("UPDATE responses SET response = '### 12 LPA' WHERE prompt_id = 'p_00000'")
        store.execute_write("UPDATE responses SET response = '### 45000 INR' WHERE prompt_id = 'p_00001'")
    counts = reparse_store(filled_store, "default")
    assert sum(counts.values()) == 40
    frame = load_results(filled_store, models=["sim:fair"]).set_index("prompt_id")
    assert frame.loc["p_00000", "value"] == 1_200_000 and frame.loc["p_00001", "value"] == 45_000
    v1 = load_results(filled_store, models=["sim:fair"], profile="rupeebias-v1").set_index("prompt_id")
    assert (v1["parse_profile"] == "rupeebias-v1").all()
    assert v1.loc["p_00001", "release_value"] == 45000  # the release's quirk: bare INR < 1 lakh read as LPA
    reparse_store(filled_store, "rupeebias-v1")
    stored = load_results(filled_store, models=["sim:fair"]).set_index("prompt_id")
    assert (stored["parse_profile"] == "rupeebias-v1").all()
    assert json.dumps(stored.loc["p_00001", "value"]) == json.dumps(v1.loc["p_00001", "value"])


def test_reading_in_chunks_gives_the_frame_one_read_gives(tmp_path: Path, fake_server, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Chunks where a column is all NULL (errors, refusals, units) must not change any dtype or value."""
    from counterbench.run import results_reader as results
    from tests.run.conftest import FAST_RETRY, fake_model

    store = tmp_path / "s.db"
    prompts = make_prompts(12)
    prompts.loc[4, "user"] += " [[fault:400]]"  # not retryable: an error row with its message
    prompts.loc[9, "user"] += " [[fault:content_filter]]"  # filtered, no value, no unit
    run_prompts(prompts, [fake_model(fake_server), "sim:fair"], store=store, retry=FAST_RETRY)
    monkeypatch.setattr(results, "READ_CHUNK_ROWS", 10**9)
    whole = load_results(store, include_prompt_text=True)
    assert whole["error"].notna().sum() >= 1 and (whole["status"] == "filtered").sum() >= 1
    for rows in (1, 3, 5):
        monkeypatch.setattr(results, "READ_CHUNK_ROWS", rows)
        pd.testing.assert_frame_equal(load_results(store, include_prompt_text=True), whole)
