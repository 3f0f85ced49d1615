"""Comparing three models behind local OpenAI-compatible servers on a study of every kind (label and score among
them): HTTP → store → analysis → report, then the store analysed again. The planted model is marked different
from each fair one on the planted comparison, in the kind's unit; the two fair ones (the same law, noise of
their own) on nothing; every kind gets a ranking in its unit.
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import counterbench
from counterbench.testing._fakecore import FaultConfig, run_in_thread
from counterbench.testing.fake_openai import FakeOpenAIServer
from tests.matrix.planted import PLANTED_LEVEL, Planted, reply, use_case, write_study


def _twin(system: str, user: str) -> str:
    """The fair rule with noise of its own (its draws are keyed on a different text)."""
    return reply(None)(system, user + " ")


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    tmp = tmp_path_factory.mktemp("compare_kinds")
    study = str(write_study(tmp, "single"))
    with ExitStack() as stack:
        urls = {name: stack.enter_context(run_in_thread(FakeOpenAIServer(FaultConfig(reply=rule)))).base_url
                for name, rule in (("planted", reply(Planted())), ("fair", reply(None)), ("twin", _twin))}
        audit = counterbench.audit(study, [f"{name}=openai-compatible:{url}:matrix" for name, url in urls.items()],
                                   store=tmp / "cb.db", out=tmp / "out", bootstrap=400, concurrency=16)
    return audit, tmp


@pytest.mark.parametrize("kind", ["label", "score"])
def test_the_planted_model_differs_from_each_fair_one_and_the_fair_ones_do_not(compared: tuple[Any, Path],
                                                                              kind: str) -> None:
    audit, _ = compared
    diffs = audit.analysis.tables["model_differences"]
    mine = diffs[(diffs["use_case"] == use_case(kind)) & (diffs["comparison"] == PLANTED_LEVEL)]
    with_planted = mine[(mine["model_a"] == "planted") | (mine["model_b"] == "planted")]
    assert len(with_planted) == 2 and with_planted["significant"].astype(bool).all(), mine
    truth = Planted().truth(kind)
    for row in with_planted.itertuples():  # planted − fair, in the kind's unit (percentage points, points)
        sign = 1 if row.model_a == "planted" else -1
        low, high = sorted((sign * row.ci_low, sign * row.ci_high))
        centre, half = (low + high) / 2, (high - low) / 2 * 3 / 1.96  # 3 standard errors: one fixed data set
        assert high < 0 and centre - half <= truth <= centre + half, row
    fair = diffs[diffs["model_a"].isin(["fair", "twin"]) & diffs["model_b"].isin(["fair", "twin"])]
    assert len(fair) and not fair["significant"].astype(bool).any(), fair[fair["significant"].astype(bool)]
    ranks = audit.analysis.tables["model_ranks"]
    planted = ranks[(ranks["use_case"] == use_case(kind)) & (ranks["comparison"] == PLANTED_LEVEL)]
    assert planted.set_index("model").loc["planted", "rank"] == 3
    assert planted.set_index("model").loc["planted", "rank_low"] >= 2  # told apart from a fair model at least
    assert set(planted["unit"]) == {str(mine["unit"].iloc[0])} and str(mine["unit"].iloc[0])


def test_the_report_shows_the_comparison_and_the_store_gives_it_again(compared: tuple[Any, Path]) -> None:
    audit, tmp = compared
    report = (tmp / "out" / "report.md").read_text(encoding="utf-8")
    assert "## Differences between models" in report and "## Ranking the models" in report
    findings = audit.analysis.summary["findings"]
    assert any(f.startswith("fair and twin do not differ beyond noise") for f in findings), findings
    assert any("planted" in f and "differ on" in f for f in findings), findings
    again = counterbench.analyze(tmp / "cb.db", str(tmp / "matrix_single.yaml"), bootstrap=400)
    key = ["label", "use_case", "language", "model_a", "model_b"]
    pd.testing.assert_frame_equal(
        again.tables["model_differences"].sort_values(key).reset_index(drop=True),
        audit.analysis.tables["model_differences"].sort_values(key).reset_index(drop=True), check_dtype=False)
