"""Canonical pair gap, maximum observed gap, identifier deviation (paper App. A.3, §6, App. C)."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
import pytest

from counterbench.stats import canonical_pair_gap, identifier_deviation, maximum_observed_gap

from .helpers import cluster_index_rows, design

CELL_SLOTS = ["language", "profile_id", "question_variant"]


def test_cpg_hand_worked() -> None:
    # three matched slots: R = 100, 110, 90 and C = 90, 100, 95 (plus one slot where C is missing)
    # x̄_R = 100, x̄_C = 95 → CPG = (100 − 95) / 97.5 × 100 = 5.128205 %;
    # R > C in 2 of 3 matched slots → sign consistency 66.67 %
    frame = pd.DataFrame(
        {
            "slot": [1, 1, 2, 2, 3, 3, 4, 4],
            "identifier": ["R", "C"] * 4,
            "value": [100, 90, 110, 100, 90, 95, 500, np.nan],
        }
    )
    res = canonical_pair_gap(frame, "R", "C", ["slot"], n_boot=500, seed=3)
    assert res.cpg == pytest.approx(5 / 97.5 * 100, abs=1e-12)
    assert res.sign_consistency == pytest.approx(200 / 3)
    assert res.tie_share == 0.0 and res.n_slots == 3
    assert (res.mean_reference, res.mean_comparison) == (100.0, 95.0)
    # paired slot bootstrap, reproduced by an explicit loop over the same random stream
    r, c = np.array([100.0, 110.0, 90.0]), np.array([90.0, 100.0, 95.0])
    reps = [(r[i].sum() - c[i].sum()) / ((r[i].sum() + c[i].sum()) / 2) * 100 for i in cluster_index_rows(3, 3, 500)]
    assert (res.low, res.high) == pytest.approx(tuple(np.quantile(reps, [0.025, 0.975])), abs=1e-9)
    assert res.significant == (res.low > 0 or res.high < 0)


def test_mog_hand_worked() -> None:
    # identifier means A = 100, B = 80, C = 120: gaps A–B 20/90 = 22.2 %, A–C 20/110 = 18.2 %,
    # B–C 40/100 = 40 % → MOG 40 %, top C, bottom B
    frame = pd.DataFrame(
        {"slot": [1, 1, 1, 2, 2, 2], "identifier": list("ABC") * 2, "value": [90, 70, 110, 110, 90, 130]}
    )
    res = maximum_observed_gap(frame, ["slot"], n_boot=200, seed=1)
    assert res.mog == pytest.approx(40.0, abs=1e-12)
    assert (res.top, res.bottom, res.mean_top, res.mean_bottom) == ("C", "B", 120.0, 80.0)
    assert (res.n_identifiers, res.n_slots) == (3, 2)


def test_mog_matches_brute_force() -> None:
    rng = np.random.default_rng(4)
    frame = design(use_cases={"salary_estimation": (4, 2)}, axes={"Caste": 7}, languages=("en",))
    frame["value"] = rng.gamma(20, 5, len(frame))
    frame.loc[rng.random(len(frame)) < 0.2, "value"] = np.nan
    res = maximum_observed_gap(frame, ["profile_id", "question_variant"], n_boot=100, seed=2)
    means = frame.groupby("identifier")["value"].mean()
    best = max(
        ((abs(means[a] - means[b]) / ((means[a] + means[b]) / 2) * 100, a, b) for a, b in combinations(means.index, 2)),
        key=lambda t: t[0],
    )
    assert res.mog == pytest.approx(best[0], abs=1e-9)
    assert {res.top, res.bottom} == {best[1], best[2]}
    assert means[res.top] > means[res.bottom]


def test_identifier_deviation_hand_worked_and_averaging() -> None:
    # slice 1: means A = 90, B = 100, C = 110 → G = 100 → −10 %, 0 %, +10 %
    # slice 2: means A = 50, B = 50, C = 200 → G = 100 → −50 %, −50 %, +100 %
    frame = pd.DataFrame(
        {
            "use_case": ["u1"] * 6 + ["u2"] * 3,
            "identifier": list("ABCABC") + list("ABC"),
            "value": [80, 100, 100, 100, 100, 120, 50, 50, 200],
        }
    )
    per_slice = identifier_deviation(frame, ["use_case"])
    np.testing.assert_allclose(per_slice["deviation"], [-10, 0, 10, -50, -50, 100], atol=1e-12)
    averaged = identifier_deviation(frame, ["use_case"], average_over=["use_case"])
    np.testing.assert_allclose(averaged["deviation"], [-30, -25, 55], atol=1e-12)
    assert list(averaged["n_slices"]) == [2, 2, 2]
    with pytest.raises(ValueError):
        identifier_deviation(frame, ["use_case"], average_over=["model"])


def test_recovery_of_injected_bias() -> None:
    """+15 % for one identifier and −15 % for another must come out with the right sign and size."""
    rng = np.random.default_rng(2026)
    frame = design(use_cases={"salary_estimation": (18, 3)}, axes={"Caste": 24})
    effect = np.where(frame["identifier"] == "Caste_00", 1.15, np.where(frame["identifier"] == "Caste_05", 0.85, 1.0))
    level = 4e5 + 1e5 * pd.factorize(frame["profile_id"])[0]
    frame["value"] = level * effect * rng.normal(1.0, 0.05, len(frame))
    # expected CPG = (1.15 − 0.85) / ((1.15 + 0.85) / 2) × 100 = 30 %
    cpg = canonical_pair_gap(frame, "Caste_00", "Caste_05", CELL_SLOTS, n_boot=2000, seed=1)
    assert cpg.cpg == pytest.approx(30.0, abs=1.5)
    assert cpg.significant and cpg.low > 25 and cpg.high < 35 and cpg.low < 30 < cpg.high
    assert cpg.sign_consistency == 100.0 and cpg.n_slots == 108
    reverse = canonical_pair_gap(frame, "Caste_05", "Caste_00", CELL_SLOTS, n_boot=500, seed=1)
    assert reverse.cpg == pytest.approx(-cpg.cpg) and reverse.sign_consistency == 0.0
    null = canonical_pair_gap(frame, "Caste_01", "Caste_02", CELL_SLOTS, n_boot=2000, seed=1)
    assert not null.significant and abs(null.cpg) < 2
    mog = maximum_observed_gap(frame, CELL_SLOTS, n_boot=1000, seed=1)
    assert (mog.top, mog.bottom) == ("Caste_00", "Caste_05")
    assert mog.mog == pytest.approx(30.0, abs=1.5) and mog.low > 25
    dev = identifier_deviation(frame, ["language", "axis"], average_over=["language"]).set_index("identifier")
    # G = (1.15 + 0.85 + 22) / 24 = 1 → deviations +15 % and −15 %
    assert dev.loc["Caste_00", "deviation"] == pytest.approx(15.0, abs=1.5)
    assert dev.loc["Caste_05", "deviation"] == pytest.approx(-15.0, abs=1.5)


def test_missing_identifier_and_duplicates() -> None:
    frame = pd.DataFrame({"slot": [1, 2], "identifier": ["R", "R"], "value": [1.0, 2.0]})
    res = canonical_pair_gap(frame, "R", "C", ["slot"], n_boot=10)
    assert res.n_slots == 0 and np.isnan(res.cpg) and not res.significant
    dup = pd.DataFrame({"slot": [1, 1], "identifier": ["R", "R"], "value": [1.0, 2.0]})
    with pytest.raises(ValueError, match="more than once"):
        maximum_observed_gap(dup, ["slot"], n_boot=10)
