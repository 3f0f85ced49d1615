"""The results reader (prompts' side read once, attached by key) gives exactly the frame a SQL join gives."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from counterbench.run import run_prompts
from counterbench.run.results import load_results, read_results
from counterbench.run.results_reader import PROMPT_SIDE, RESULT_COLUMNS, ResultsReader
from tests.run.conftest import make_prompts


def _joined(store: Path, models: list[str] | None, texts: bool) -> pd.DataFrame:
    """The reference: the whole join in one SQL read, written out here."""
    cols = [f"p.{c}" if c in PROMPT_SIDE else f"r.{c}" for c in RESULT_COLUMNS]
    cols += ["p.system", "p.user"] if texts else []
    sql = (f"SELECT {', '.join(cols)}, p.design FROM responses r LEFT JOIN prompts p "
           "ON p.prompt_id = r.prompt_id AND p.prompt_hash = r.prompt_hash")
    params: list[str] = []
    if models:
        sql += f" WHERE r.model IN ({', '.join('?' * len(models))})"
        params = models
    with sqlite3.connect(store) as conn:
        return pd.read_sql_query(sql + " ORDER BY r.model, r.config_fp, r.id", conn, params=params)


@pytest.fixture
def two_studies(tmp_path: Path) -> Path:
    """Two studies in one store; the second's prompts have no question variant; one model answered only some."""
    store = tmp_path / "two.db"
    first = make_prompts(16)
    second = make_prompts(10, prefix="q").assign(study="other", question_variant=None)
    run_prompts(first, ["sim:fair", "sim:biased"], store=store)
    run_prompts(second, ["sim:fair"], store=store)
    return store


@pytest.mark.parametrize("texts", [False, True])
def test_every_model_read_alone_or_together_equals_the_join(two_studies: Path, texts: bool) -> None:
    with ResultsReader(two_studies) as reader:
        for models in (["sim:biased"], ["sim:fair"], None, ["sim:fair", "sim:biased"]):
            raw = reader.read(models, include_prompt_text=texts)
            pd.testing.assert_frame_equal(raw, _joined(two_studies, models, texts), check_exact=True)
    assert _joined(two_studies, ["sim:biased"], False)["question_variant"].dtype == "int64"


def test_an_answer_without_its_prompt_row_reads_as_the_join_does(two_studies: Path) -> None:
    with ResultsReader(two_studies) as reader:
        reader.read(["sim:fair"])  # the prompts' side is now cached
        with sqlite3.connect(two_studies) as conn:
            conn.execute("DELETE FROM prompts WHERE prompt_id = 'p_00003'")
        for models in (["sim:fair"], ["sim:biased"]):
            raw = reader.read(models)
            pd.testing.assert_frame_equal(raw, _joined(two_studies, models, False), check_exact=True)
        assert raw["study"].isna().sum() == 1


def test_prompts_added_after_the_first_read_are_found(two_studies: Path) -> None:
    """A reader kept open while a run adds prompts and answers still gives every answer its prompt's columns."""
    with ResultsReader(two_studies) as reader:
        reader.read(["sim:fair"])
        run_prompts(make_prompts(4, prefix="late"), ["sim:fair"], store=two_studies)
        raw = reader.read(["sim:fair"])
        pd.testing.assert_frame_equal(raw, _joined(two_studies, ["sim:fair"], False), check_exact=True)
        assert raw["prompt_id"].str.startswith("late").sum() == 4 and raw["study"].notna().all()


def test_finished_frames_equal_load_results(two_studies: Path) -> None:
    with ResultsReader(two_studies) as reader:
        for model in ("sim:fair", "sim:biased"):
            pd.testing.assert_frame_equal(read_results(reader, [model], "default"),
                                          load_results(two_studies, [model], "default"), check_exact=True)
