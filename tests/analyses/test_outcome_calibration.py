"""Calibration, small, of the non-amount outcome tables: simulated score, rate and yes/no studies with
no planted effect (and two with one) through ``analyze`` — one yes/no study also with decision
probabilities (the ``probability_*`` tables) — (the long version, ≥ 500 simulated models per scenario,
is ``benchmarks/calibration.py``; docs/analysis.md gives its figures).

Seeded, so every figure is reproducible. The bounds leave room for the Monte Carlo error of these
small runs and still fail on the previous behaviour: with 4 matched slots the percentile interval
covered ~80% and a simulated model with nothing planted got a mark ~45% of the time; with 4
clusters the regression's normal quantiles covered ~87% and marked ~35% of null models.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

import counterbench
from counterbench.report.api import render_report

from .outcome_calibration_sim import run_outcome_scenario, scenarios, simulate_outcome_results

pytestmark = pytest.mark.slow  # scheduled first (tests/conftest.py)

SIMS = 40
BOOT = 300


NULL = ["score_null", "score_four_slots_null", "score_six_slots_null", "rate_languages_null",
        "label_crossed_four_clusters_null", "label_crossed_six_clusters_null",
        "probability_crossed_six_clusters_null"]


@pytest.fixture(scope="module")
def null_runs() -> dict[str, dict[str, Any]]:
    every = scenarios(SIMS, BOOT, seed=20)
    return {name: run_outcome_scenario(every[name]) for name in NULL}


@pytest.mark.parametrize("name", NULL)
def test_intervals_cover_and_no_star_without_an_effect(null_runs: dict[str, dict[str, Any]], name: str) -> None:
    run = null_runs[name]
    assert set(run["coverage"]) >= {"outcome_gaps"}
    for table, entry in run["coverage"].items():
        assert entry["share_testable"] == (0.0 if "four" in name else 1.0), (table, entry)  # MIN_SLOTS = 6
        assert entry["n"] >= SIMS and 0.9 <= entry["covered"] <= 0.995, (table, entry)
    for table, entry in run["family_wise_false_stars"].items():
        assert entry["models"] == SIMS and entry["after"] <= 0.1, (table, entry)


def test_few_clusters_need_t_quantiles(null_runs: dict[str, dict[str, Any]]) -> None:
    """Four and six clusters: the same CR1 standard errors with normal quantiles (before) cover too
    little and mark too often."""
    for name in ("label_crossed_four_clusters_null", "label_crossed_six_clusters_null"):
        run = null_runs[name]
        reg = run["coverage"]["crossed_regression"]
        assert reg["normal_quantiles"] < 0.93 < reg["covered"], (name, reg)
    stars = null_runs["label_crossed_six_clusters_null"]["family_wise_false_stars"]["crossed_regression"]
    assert stars["normal_quantiles_bh"] > 0.1 >= stars["after"], stars


def test_planted_effects_are_found_with_the_right_sign() -> None:
    every = scenarios(12, BOOT, seed=30)
    score = run_outcome_scenario(every["score_planted"])  # wheelchair users −2 points, 12 slots
    power = score["power"]["outcome_gaps"]
    assert power["n"] == 12 and power["right_sign"] == 1.0 and power["marked"] >= 0.8, power
    assert score["coverage"]["outcome_gaps"]["covered"] >= 0.85
    label = run_outcome_scenario(scenarios(6, BOOT, seed=31)["label_crossed_planted"])  # Black −20 points
    assert label["power"]["outcome_gaps"]["marked"] == 1.0 and label["power"]["outcome_gaps"]["right_sign"] == 1.0
    assert label["power"]["crossed_regression"]["right_sign"] == 1.0


def test_too_few_matched_prompts_are_not_tested_and_the_report_says_so() -> None:
    path = scenarios(1, BOOT)["score_planted"].path
    prompts = counterbench.prompts(path, profile=["P01"], question_variant=[1, 2])  # 2 matched slots
    law = scenarios(1, BOOT)["score_planted"].law
    result = counterbench.analyze(simulate_outcome_results(prompts, "sim:few", law, seed=3), path, bootstrap=BOOT)
    gaps = result.tables["outcome_gaps"]
    assert len(gaps) == 4 and (gaps["n_slots"] == 2).all()
    assert not gaps["testable"].astype(bool).any() and not gaps["significant"].astype(bool).any()
    assert gaps["p_value"].isna().all() and gaps["q_value"].isna().all()
    assert result.summary["findings"] == ["sim:few: too few matched prompts to test any comparison (n = 2; 6 needed)."]
    html, md = render_report(result)
    assert "too few matched prompts to test (n = 2)" in md and "its tested rows of every table that marks" in md
    assert "too few matched prompts to test (n = 2)" in html


def test_swap_test_p_is_seeded_by_the_analysis_seed() -> None:
    scenario = scenarios(1, BOOT)["score_null"]
    results = simulate_outcome_results(counterbench.prompts(scenario.path), "sim:seeded", scenario.law, seed=5)
    first = counterbench.analyze(results, scenario.path, bootstrap=BOOT, seed=1)
    a, b = first.tables["outcome_gaps"], counterbench.analyze(results, scenario.path, bootstrap=BOOT,
                                                              seed=1).tables["outcome_gaps"]
    pd.testing.assert_frame_equal(a, b)
    assert a["p_value"].between(0, 1).all() and (a["ci_low"] < a["difference"]).all()
    assert first.summary["findings"] == ["sim:seeded: no gap beyond noise (4 comparisons tested)."]


def test_findings_say_when_no_gap_could_have_been_marked() -> None:
    scenario = scenarios(1, BOOT)["score_six_slots_null"]  # 6 slots, 4 comparisons: 8 slots needed
    prompts = counterbench.prompts(scenario.path, **scenario.subset)
    result = counterbench.analyze(simulate_outcome_results(prompts, "sim:six", scenario.law, seed=4), scenario.path,
                                  bootstrap=BOOT)
    assert result.tables["outcome_gaps"]["testable"].astype(bool).all()
    assert result.summary["findings"] == [
        "sim:six: no gap beyond noise (4 comparisons tested; with at most 6 matched prompts per comparison no gap "
        "among 4 could be marked, whatever its size (8 needed))."]
