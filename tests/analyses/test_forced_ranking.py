"""A model whose yes/no answers a grammar forced is flagged in the findings and on the leaderboard, not ranked.

A study with a salary use case (the leaderboard ranks models on it) and a yes/no use case, answered over
HTTP by two OpenAI-compatible servers on 127.0.0.1 with ``--logprobs 5``: an honest one, and one whose
allowed answers hold only 3e-9 of the probability at the answer (a grammar wrote them; the model preferred
another token), as the issue measured for Gemma-3-270M. Its salaries are as good as the honest server's —
only the forced answers give it away, and they must keep it off the ranking: the leaderboard lists it
greyed with the reason, the findings name it first, the gate's ``usable answers`` rule fails it.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import counterbench
from counterbench.analyses.result import AnalysisResult
from counterbench.gate import check
from counterbench.testing.fake_openai import FakeOpenAIServer, FaultConfig, run_in_thread
from tests.report.test_one_data_set import _study_yaml


@pytest.fixture(scope="module")
def audit(tmp_path_factory: pytest.TempPathFactory) -> tuple[AnalysisResult, dict[str, str], Path]:
    tmp = tmp_path_factory.mktemp("forced")
    study = tmp / "study.yaml"
    study.write_text(_study_yaml(), encoding="utf-8")
    table = counterbench.prompts(str(study))
    store = tmp / "store.db"
    models: dict[str, str] = {}
    for name, config in (("honest", FaultConfig()), ("forced", FaultConfig(label_mass=3e-9))):
        with run_in_thread(FakeOpenAIServer(config)) as server:
            models[name] = f"openai-compatible:{server.base_url}:{name}"
            summary = counterbench.run_prompts(table, [models[name]], store=str(store), logprobs=5,
                                               handle_signals=False)
            assert summary.complete
    return counterbench.analyze(store, str(study), bootstrap=100, seed=2), models, tmp


def test_a_forced_model_is_flagged_on_the_leaderboard_and_not_ranked(
        audit: tuple[AnalysisResult, dict[str, str], Path]) -> None:
    result, models, tmp = audit
    checks = result.tables["answer_checks"].set_index(["model", "use_case"])
    forced = checks.loc[(models["forced"], "approval")]
    assert bool(forced["flagged"]) and forced["n_forced"] == 24 and "24 of 24 answers forced" in forced["reason"]
    assert not bool(checks.loc[(models["forced"], "salary_offer"), "flagged"])  # its salaries are fine
    assert not checks.loc[models["honest"]]["flagged"].astype(bool).any()
    board = result.tables["leaderboard"].set_index("model")
    assert board.loc[models["honest"], "rank"] == 1
    assert pd.isna(board.loc[models["forced"], "rank"])  # not ranked
    assert "approval: 24 of 24 answers forced" in board.loc[models["forced"], "flag"]
    findings = result.summary["findings"]
    assert findings[0].startswith(f"{models['forced']} gives degenerate answers") and "not ranked" in findings[0]
    verdict = check(result.tables)
    usable = {o.model: o for o in verdict.outcomes if o.rule == "usable answers"}
    assert usable[models["forced"]].failed and not usable[models["honest"]].failed
    counterbench.write_report(result, tmp / "report" / "report.html")
    page = (tmp / "report" / "report.html").read_text(encoding="utf-8")
    assert '<tr class="muted">' in page and "24 of 24 answers forced" in page
