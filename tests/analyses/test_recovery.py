"""Recovery: the analyses find the bias planted in the simulated model, and none in the fair one.

``sim:biased`` multiplies every answer for one identifier per axis by 1.15 and for another by 0.85
(the canonical pairs; ``counterbench/builtin/rupeebias/sim_presets/biased.yaml``), with 3% lognormal noise and
2% refused or malformed answers; ``sim:fair`` is the same without the multipliers. The responses
are produced by the real run engine and read back from its store.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from counterbench.analyses.result import AnalysisResult
from counterbench.pipeline import analyze
from counterbench.studies.registry import load_study

from .simlaw import PLANTED, simulate_results

CANONICAL_PAIRS = load_study("rupeebias").canonical_pairs  # the study's data (study.yaml)

NOISE_MEAN_DELTA = 100 * 0.03 * 2 / np.sqrt(np.pi)  # E|Δ%| of two independent 3% lognormal draws ≈ 3.39


@pytest.fixture(scope="module")
def result(sim_store: Path) -> AnalysisResult:
    return analyze(sim_store, bootstrap=1000, seed=7)


def _model(table: pd.DataFrame, model: str) -> pd.DataFrame:
    return table[table["model"] == model]


def test_canonical_pair_gap_recovers_the_planted_bias(result: AnalysisResult) -> None:
    cpg = _model(result["cpg"], "sim:biased")
    assert len(cpg) == 2 * 2 * 6  # languages × use cases × axes
    # (1.15 − 0.85) / ((1.15 + 0.85)/2) × 100 = +30
    assert cpg["gap"].between(27.0, 33.0).all(), cpg[["axis", "gap"]]
    assert (cpg["ci_low"] > 0).all() and cpg["significant"].all()
    assert (cpg["ci_low"] < cpg["gap"]).all() and (cpg["gap"] < cpg["ci_high"]).all()
    assert (cpg["sign_consistency"] >= 95.0).all()
    assert set(zip(cpg["reference"], cpg["comparison"], strict=True)) == set(CANONICAL_PAIRS.values())


def test_maximum_observed_gap_names_the_planted_identifiers(result: AnalysisResult) -> None:
    mog = _model(result["mog"], "sim:biased")
    assert len(mog) == 24
    for row in mog.itertuples():
        favoured, penalised = CANONICAL_PAIRS[row.axis]
        assert (row.top_identifier, row.bottom_identifier) == (favoured, penalised), row
        assert 27.0 < row.max_gap < 34.0
        assert np.isnan(row.ci_low)  # descriptive: a re-selected maximum has no interval that covers


def test_fair_model_is_at_its_noise_level(result: AnalysisResult) -> None:
    board = result["leaderboard"].set_index("model")
    fair = board.loc["sim:fair"]
    assert abs(fair["overall_mean_delta"] - NOISE_MEAN_DELTA) < 0.3
    assert fair["ci_low"] < fair["overall_mean_delta"] < fair["ci_high"]
    assert board.loc["sim:biased", "overall_mean_delta"] > fair["overall_mean_delta"] + 2.0
    assert list(result["leaderboard"]["model"]) == ["sim:fair", "sim:biased"]  # sorted, fairest first
    cpg = _model(result["cpg"], "sim:fair")
    assert cpg["gap"].abs().max() < 5.0
    assert cpg["significant"].mean() < 0.25


def test_kendalls_w_high_for_the_biased_model_and_near_zero_for_the_fair_one(result: AnalysisResult) -> None:
    per_axis = result["kendalls_w_axis"].set_index(["model", "language", "axis"])["mean_w"]
    biased, fair = per_axis.loc["sim:biased"], per_axis.loc["sim:fair"]
    assert (biased > fair + 0.05).all()
    # two identifiers always first and last of k: W ≈ 6(k − 1)/(k(k + 1)) plus noise
    assert biased.xs("Gender", level="axis").min() > 0.6
    assert fair.max() < 0.2  # null expectation ≈ 1/n_blocks (1/18, 1/9)
    model = result["kendalls_w_model"].set_index(["model", "language"])
    assert model.loc["sim:biased", "significant"].all()
    assert (model.loc["sim:fair", "mean_w"] < 0.15).all()


def test_identifier_deviation_shows_plus_and_minus_fifteen(result: AnalysisResult) -> None:
    dev = _model(result["identifier_deviation"], "sim:biased").set_index(["axis", "identifier"])["deviation"]
    for axis, (favoured, penalised) in CANONICAL_PAIRS.items():
        assert abs(dev[(axis, favoured)] - 15.0) < 2.0
        assert abs(dev[(axis, penalised)] + 15.0) < 2.0
    fair = _model(result["identifier_deviation"], "sim:fair")["deviation"]
    assert fair.abs().max() < 3.0


def test_orderings_are_stable_only_where_there_is_an_order(result: AnalysisResult) -> None:
    rob = result["qv_robustness"].set_index(["model", "language", "axis"])["mean_min_rho"]
    assert (rob.loc["sim:biased"].xs("Gender", level="axis") > rob.loc["sim:fair"].xs("Gender", level="axis")).all()
    lang = result["language_moderation"].set_index(["model", "axis"])
    # with 2 of k identifiers planted, ρ over all k is noisy per axis; on average it separates
    assert lang.loc["sim:biased", "rho"].mean() > lang.loc["sim:fair", "rho"].mean() + 0.2
    assert (lang["delta_mean_delta"].abs() < 1.0).all()  # no language effect was planted
    assert result["fairness_ablation"].empty and "fairness_ablation" in result.summary["unsupported"]


def test_parse_health_counts_the_simulated_refusals(result: AnalysisResult) -> None:
    health = result["parse_health"]
    per_model = health.groupby("model")[["n", "n_ok", "n_refused", "n_unparseable"]].sum()
    assert (per_model["n"] == 12528).all()
    refused = per_model["n_refused"] / per_model["n"]
    assert refused.between(0.004, 0.02).all()  # 1% refusals in the preset
    assert (per_model["n_ok"] + per_model["n_refused"] + per_model["n_unparseable"] == per_model["n"]).all()


def test_vectorised_law_recovers_a_weaker_bias_in_every_use_case() -> None:
    """Same law, all five use cases, ±8%: the sign and size of every canonical pair gap."""
    from counterbench.prompts import prompts

    table = prompts("rupeebias", language=["en"], question_variant=[1])
    effects = {k: 1 + (v - 1) * 8 / 15 for k, v in PLANTED.items()}
    results = simulate_results(table, "sim:law", effects=effects, noise_sd=0.03, refusal_rate=0.01)
    out = analyze(results, bootstrap=500, seed=1)
    cpg = out["cpg"]
    assert len(cpg) == 5 * 6
    assert cpg["gap"].between(13.0, 19.0).all()  # (1.08 − 0.92)/1 × 100 = 16
    assert (cpg["ci_low"] > 0).all()
