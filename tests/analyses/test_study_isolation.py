"""A store holding RupeeBias and two user studies: every verb analyses only the study it is given, and its
tables equal those from a store holding that study alone."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import counterbench
from tests.conftest import REPO

pytestmark = pytest.mark.slow
STUDIES = {
    "rupeebias": {"use_case": ["salary_estimation"], "language": ["en"], "sample_slots": 12, "seed": 1},
    str(REPO / "examples" / "loan_rate.yaml"): {},
    str(REPO / "examples" / "suitability_score.yaml"): {},
}
MODELS = ["sim:biased", "sim:fair"]


def _fill(store: Path, studies: list[str]) -> None:
    for study in studies:
        counterbench.run_prompts(counterbench.prompts(study, **STUDIES[study]), MODELS, store=store)


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("isolation")
    out = {"all": root / "all.db"}
    _fill(out["all"], list(STUDIES))
    for i, study in enumerate(STUDIES):
        out[study] = root / f"alone{i}.db"
        _fill(out[study], [study])
    return out


def _same(a: dict[str, pd.DataFrame], b: dict[str, pd.DataFrame]) -> None:
    assert set(a) == set(b)
    for name in a:
        pd.testing.assert_frame_equal(a[name].reset_index(drop=True), b[name].reset_index(drop=True),
                                      check_dtype=False, obj=name)


@pytest.mark.parametrize("study", list(STUDIES), ids=["rupeebias", "loan_rate", "suitability_score"])
def test_python_analysis_of_a_shared_store_equals_the_study_alone(stores: dict[str, Path], study: str) -> None:
    shared = counterbench.analyze(stores["all"], study, bootstrap=50, seed=2)
    alone = counterbench.analyze(stores[study], study, bootstrap=50, seed=2)
    _same(shared.tables, alone.tables)
    assert shared.summary["study"] == Path(study).stem if study.endswith(".yaml") else study
    for frame in shared.tables.values():
        if "use_case" in frame.columns and len(frame):
            allowed = set(counterbench.prompts(study, **STUDIES[study])["use_case"])
            assert set(frame["use_case"].dropna().astype(str)) <= allowed  # averaged rows (power) have none


def test_cli_verbs_take_the_study(cli: Callable[..., Any], stores: dict[str, Path], tmp_path: Path) -> None:
    loan = str(REPO / "examples" / "loan_rate.yaml")
    out = tmp_path / "an"
    proc = cli("analyze", loan, "--store", str(stores["all"]), "-o", str(out), "--bootstrap", "50",
               "--bootstrap-seed", "2")
    assert proc.returncode == 0, proc.stderr
    alone = counterbench.analyze(stores[loan], loan, bootstrap=50, seed=2)
    written = pd.read_parquet(out / "outcome_gaps.parquet")
    pd.testing.assert_frame_equal(written, alone.tables["outcome_gaps"].reset_index(drop=True), check_dtype=False)
    report = cli("report", loan, "--store", str(stores["all"]), "-o", str(tmp_path / "r.html"), "--bootstrap", "50")
    assert report.returncode == 0, report.stderr
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "Loan interest rates quoted to applicants" in html and "Spanish" in html and "Leaderboard" not in html
    several = cli("report", "--store", str(stores["all"]), "-o", str(tmp_path / "x.html"))
    assert several.returncode == 2 and "holds several studies" in several.stderr
    board = cli("analyze", "rupeebias", "--store", str(stores["all"]), "-o", str(tmp_path / "rb"), "--bootstrap", "0")
    assert board.returncode == 0, board.stderr
    leaderboard = pd.read_csv(tmp_path / "rb" / "leaderboard.csv")
    assert set(leaderboard["model"]) == set(MODELS)
    # its amount use cases get the generic tables too, and nothing of the loan study's rates enters them
    rb_gaps = pd.read_csv(tmp_path / "rb" / "outcome_gaps.csv")
    assert set(rb_gaps["kind"]) == {"amount"} and set(rb_gaps["difference_unit"]) == {"% of the pair's mean"}
