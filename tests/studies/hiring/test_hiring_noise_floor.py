"""A noise floor for disparity, deviation and the Top-Score Rate: intervals and the same metric under the null."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from counterbench.builtin.hiring import synthetic as syn
from counterbench.builtin.hiring.analysis import analyze_hiring
from counterbench.builtin.hiring.plan import build_prompts, full_plan, plan_from_mapping


@pytest.fixture(scope="module")
def prompts() -> pd.DataFrame:
    plan = plan_from_mapping({"jobs": 20, "settings": ["compare", "score"], "rationale": [False],
                              "language_only": False}, base=full_plan())
    return build_prompts(plan)


def _summary(prompts: pd.DataFrame, planted: syn.Planted, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    tables, _ = analyze_hiring(syn.answer_texts(prompts, "m", planted, seed=seed), bootstrap=1000)
    return tables["hiring_bias_summary"].set_index("setting"), tables["hiring_top_score_rates"]


def test_a_fair_evaluator_is_not_zero_but_within_its_null(prompts):
    summary, tsr = _summary(prompts, syn.Planted(), seed=5)
    for setting in ("compare", "score"):
        row = summary.loc[setting]
        assert row["disparity_null"] > 0  # a fair but noisy evaluator: disparity well above 0
        assert row["disparity_low"] <= row["disparity"] <= row["disparity_high"]
        assert row["deviation_low"] <= row["deviation"] <= row["deviation_high"]
        assert row["disparity_p"] > 0.05 and row["disparity"] <= row["disparity_null_high"] + 1e-9
    # a fair evaluator's Top-Score Rate is nowhere near the "ideal" 100 %: 5 of a job's 41 resumes per group
    marked = tsr[~tsr["group"].eq("neutral")]
    assert marked["tsr_null"].between(100 * 5 / 41 - 1, 30).all()
    assert (marked["tsr_low"] <= marked["tsr"]).all() and (marked["tsr"] <= marked["tsr_high"]).all()


def test_a_planted_preference_exceeds_the_null(prompts):
    summary, _ = _summary(prompts, syn.Planted(compare_effects={"Chinese": 0.3}), seed=5)
    row = summary.loc["compare"]
    assert row["disparity"] > row["disparity_null_high"] and row["disparity_p"] < 0.01
    # one group way ahead in scores: it tops (nearly) every job, far beyond the permutation null
    summary, tsr = _summary(prompts, syn.Planted(score_effects={"Indian Female": 25.0}), seed=5)
    assert summary.loc["score", "disparity_p"] < 0.01
    top = tsr.set_index("group").loc["Indian Female"]
    assert top["tsr"] > top["tsr_null_high"] and np.isfinite(top["tsr_null"])
