"""Calibration, small: simulated studies with known truth through ``analyze`` (the long version with
≥ 500 simulations per scenario is ``benchmarks/calibration.py``; docs/analysis.md gives its figures).

Seeded, so every figure below is reproducible; the bounds leave room for the Monte Carlo error of
these small runs and still fail if an interval or a mark goes back to the old behaviour (pair
intervals cover ~50%; a percentile interval on two slots covers ~50–80%).
"""

from __future__ import annotations

from typing import Any

import pytest
from scipy import stats

from counterbench.analyses.power import design_power, gap_power
from counterbench.stats.inference import MIN_SLOTS_INTERVAL

from .calibration_sim import CANONICAL, Scenario, design, planted_pairs, run_scenario, slot_threshold_coverage


@pytest.fixture(scope="module")
def quick_null() -> dict[str, Any]:
    return run_scenario(Scenario("quick_null", "quick", 20, bootstrap=300, seed=11))


def test_threshold_is_where_the_slot_interval_starts_to_cover() -> None:
    """'Round number' answers (90/100/110% of the level, 8% noise): below MIN_SLOTS there is no trustworthy
    interval (two slots of unequal levels carry less than two slots' information)."""
    cov = slot_threshold_coverage([MIN_SLOTS_INTERVAL - 1, MIN_SLOTS_INTERVAL], 400, noise_sd=0.08, step=0.1,
                                  n_boot=300, seed=3)
    below, at = cov[MIN_SLOTS_INTERVAL - 1], cov[MIN_SLOTS_INTERVAL]
    assert below["share_with_interval"] < 1.0 or below["slot_interval"] < 0.93  # no interval, or one that misses
    assert at["share_with_interval"] == 1.0 and at["slot_interval"] >= 0.93
    assert below["plain_percentile"] < 0.85  # the old interval at two slots


def test_quick_preset_intervals_cover_and_pair_intervals_do_not(quick_null: dict[str, Any]) -> None:
    cov = quick_null["coverage"]
    for name in ("axis_mean_delta", "use_case_mean_delta", "cpg_overall", "identifier_deviation"):
        assert cov[name]["slots"] >= 0.9, (name, cov[name])
    for name in ("axis_mean_delta", "use_case_mean_delta"):  # the paper's method, kept as a column: it
        # resamples the pairs of a slot as if independent (3 pairs per slot here, so it misses less than
        # on full English, where a slot holds up to 435)
        assert cov[name]["pairs"] < cov[name]["slots"] - 0.03, (name, cov[name])
    assert cov["axis_mean_delta.v10"]["pairs"] < 0.85
    assert cov["cpg"]["share_testable"] > 0.5  # six slots per use case: tested unless an answer is missing
    assert cov["mog"]["share_above_truth"] == 1.0  # a maximum of noise is always above the truth (0)


def test_no_earned_star_without_an_effect(quick_null: dict[str, Any]) -> None:
    """No family's chance of a false star is above 5% by a one-sided binomial test at 1% (the criterion of
    docs/analysis.md): 20 models allow 3 by chance (p 0.075); stars before the correction (6 of 20 and
    more) fail it."""
    stars = quick_null["family_wise_false_stars"]
    n = int(quick_null["n_sims"])
    for name, entry in stars.items():
        hits = round(entry["after"] * n)
        assert stats.binom.sf(hits - 1, n, 0.05) > 0.01, (name, entry)


def test_planted_gaps_are_found_in_words() -> None:
    result = run_scenario(Scenario("quick_planted", "quick", 10, planted_pairs(15.0), bootstrap=300, seed=12))
    assert result["power"]["cpg_overall"]["marked"] == 1.0
    assert result["coverage"]["cpg_overall"]["slots"] >= 0.85


def test_power_prediction_matches_its_definition() -> None:
    table = design_power(design("quick"), CANONICAL, 0.03)
    pooled = table[table["use_case"] == "all use cases"]
    # six matched prompts per use case reach p = 0.031 at best: above the first Benjamini–Hochberg step of
    # a family of 30 (0.05 / 30), so no single per-use-case gap can be marked on its own (the report says so)
    assert pooled["testable"].all() and (~table.loc[table["use_case"] != "all use cases", "testable"]).all()
    assert table.loc[table["use_case"] != "all use cases", "n_slots"].eq(6).all()
    row = pooled.iloc[0]
    df = row["n_slots"] - row["n_use_cases"]
    assert gap_power(row["mde"], row["se"], df, row["alpha"]) == pytest.approx(0.8, abs=1e-4)
    assert gap_power(2 * row["mde"], row["se"], df, row["alpha"]) > 0.99
    full = design_power(design("full_english"), CANONICAL, 0.03)
    full_pooled = full[full["use_case"] == "all use cases"]
    assert full_pooled["mde"].max() < pooled["mde"].min()  # more matched prompts, smaller detectable gaps
