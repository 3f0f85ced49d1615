"""RupeeBias unchanged: every analysis table on one fixed store, under both parse profiles, equals the
golden written by ``make_golden.py`` on the code before the study redesign (numbers to 1e-12)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from . import make_golden

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def recomputed(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    store = make_golden.build_store(tmp_path_factory.mktemp("golden") / "golden.db")
    return make_golden.golden_frame(store)


def test_every_table_and_cell_matches_the_golden(recomputed: pd.DataFrame) -> None:
    golden = pd.read_parquet(make_golden.GOLDEN)
    key = ["profile", "table", "row", "column"]
    assert set(recomputed["table"]) == set(golden["table"]), "the set of tables changed"
    merged = golden.merge(recomputed, on=key, how="outer", suffixes=("_golden", "_now"), indicator=True)
    only = merged[merged["_merge"] != "both"]
    assert only.empty, f"cells present on one side only:\n{only[[*key, '_merge']].head(20)}"
    text_g, text_n = merged["text_golden"], merged["text_now"]
    same_text = (text_g.isna() & text_n.isna()) | (text_g == text_n)
    assert same_text.all(), f"text cells differ:\n{merged.loc[~same_text, [*key, 'text_golden', 'text_now']].head(20)}"
    num_g, num_n = merged["number_golden"].to_numpy(), merged["number_now"].to_numpy()
    close = np.isclose(num_n, num_g, rtol=1e-12, atol=1e-12, equal_nan=True)
    assert close.all(), f"numbers differ:\n{merged.loc[~close, [*key, 'number_golden', 'number_now']].head(20)}"


def test_the_golden_covers_both_profiles_and_languages() -> None:
    golden = pd.read_parquet(make_golden.GOLDEN)
    assert set(golden["profile"]) == set(make_golden.PROFILES)
    board = golden[(golden["table"] == "leaderboard") & (golden["column"] == "model")]
    assert set(board["text"]) == set(make_golden.MODELS)
    assert len(golden) > 1000 and Path(make_golden.GOLDEN).stat().st_size > 0
