"""Question-variant robustness, merit sensitivity, profile rank agreement (paper App. B, App. D)."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from counterbench.stats import (
    bootstrap_mean,
    grouped_mean_ci,
    profile_pair_gaps,
    profile_rank_agreement,
    question_variant_robustness,
    robustness_summary,
    stable_seed,
)

from .helpers import brute_force_pairs, design, with_values

SETTING = ["model", "language", "use_case", "axis"]


def test_question_variant_robustness_hand_worked() -> None:
    # identifier means per variant (two profiles each, averaged):
    #   q1: A=1, B=2, C=3, D=4    q2: A=1, B=2, C=3, D=4    q3: A=2, B=1, C=3, D=4
    # ρ(q1,q2) = 1; ρ(q1,q3) = ρ(q2,q3) = 1 − 6·(1+1)/(4·15) = 0.8 → min ρ = 0.8
    means = {"q1": [1, 2, 3, 4], "q2": [1, 2, 3, 4], "q3": [2, 1, 3, 4]}
    rows = [
        (qv, ident, prof, m + (0.5 if prof == "p1" else -0.5))
        for qv, ms in means.items()
        for ident, m in zip("ABCD", ms, strict=True)
        for prof in ("p1", "p2")
    ]
    frame = pd.DataFrame(rows, columns=["question_variant", "identifier", "profile_id", "value"])
    frame["setting"] = "s"
    out = question_variant_robustness(frame, ["setting"])
    assert out.loc[0, "min_rho"] == pytest.approx(0.8, abs=1e-12)
    assert (out.loc[0, "n_variants"], out.loc[0, "n_identifiers"]) == (3, 4)


def test_question_variant_robustness_matches_brute_force() -> None:
    frame = with_values(
        design(use_cases={"salary_estimation": (3, 3), "counter_offer_recommendation": (2, 2)}), seed=5, missing=0.05
    )
    out = question_variant_robustness(frame, SETTING).set_index(SETTING)
    for key, block in frame.groupby(SETTING):
        table = block.pivot_table(
            index="identifier", columns="question_variant", values="value", aggfunc="mean"
        ).dropna()
        rhos = [stats.spearmanr(table[a], table[b]).statistic for a, b in combinations(table.columns, 2)]
        assert out.loc[key, "min_rho"] == pytest.approx(min(rhos), abs=1e-12)
    summary = robustness_summary(out.reset_index(), ["model", "language", "axis"], n_boot=300, seed=4)
    row = summary.iloc[0]
    key = tuple(row[["model", "language", "axis"]])
    values = out.reset_index().set_index(["model", "language", "axis"]).loc[key, "min_rho"].to_numpy()
    ref = bootstrap_mean(values, n_boot=300, seed=stable_seed("qv_robustness", *key, base_seed=4))
    assert (row["estimate"], row["ci_low"], row["ci_high"]) == pytest.approx((ref.estimate, ref.low, ref.high))
    assert row["passes"] == (row["estimate"] >= 0.85)
    assert "2 replicates" not in row["ci_method"] and "300 replicates" in row["ci_method"]


def test_grouped_mean_ci_seeds_by_group_name() -> None:
    frame = pd.DataFrame({"g": ["a", "a", "b", "b", "b"], "x": [1.0, 3.0, 2.0, 2.0, np.nan]})
    out = grouped_mean_ci(frame, ["g"], "x", n_boot=100, seed=1, name="demo")
    assert list(out["estimate"]) == [2.0, 2.0] and list(out["n"]) == [2, 2]
    assert list(out["seed"]) == [stable_seed("demo", "a", base_seed=1), stable_seed("demo", "b", base_seed=1)]
    assert out.loc[1, "ci_low"] == out.loc[1, "ci_high"] == 2.0


def test_merit_sensitivity_pairs_match_brute_force() -> None:
    frame = with_values(design(use_cases={"salary_estimation": (4, 2)}, axes={"Gender": 3}), seed=6, missing=0.1)
    cell = ["model", "use_case", "language", "axis"]
    pairs = profile_pair_gaps(frame, cell)
    ref = brute_force_pairs(frame, [*cell, "identifier", "question_variant"], ident="profile_id")
    assert pairs.n_pairs == len(ref)
    np.testing.assert_allclose(np.sort(pairs.gap), np.sort(ref["gap"].to_numpy()), atol=1e-9)
    # hand check: one identifier, one variant, profiles worth 100 and 300 → Δ% = 200/200·100 = 100
    tiny = pd.DataFrame(
        {"c": 1, "identifier": "A", "question_variant": 0, "profile_id": ["p1", "p2"], "value": [100.0, 300.0]}
    )
    assert profile_pair_gaps(tiny, ["c"]).gap.tolist() == [100.0]


def test_profile_rank_agreement_hand_worked_and_brute_force() -> None:
    # identifiers A and C rank profiles p1 < p2 < p3, B ranks p1 < p3 < p2:
    # ρ(A,B) = ρ(B,C) = 1 − 6·2/(3·8) = 0.5, ρ(A,C) = 1 → mean ρ = 2/3
    values = {"A": [1, 2, 3], "B": [1, 3, 2], "C": [10, 20, 30]}
    rows = [
        (i, p, v + dv)
        for i, vs in values.items()
        for p, v in zip(["p1", "p2", "p3"], vs, strict=True)
        for dv in (-0.1, 0.1)
    ]
    frame = pd.DataFrame(rows, columns=["identifier", "profile_id", "value"]).assign(cell="x")
    out = profile_rank_agreement(frame, ["cell"])
    assert out.loc[0, "mean_rho"] == pytest.approx(2 / 3, abs=1e-12)
    assert (out.loc[0, "n_profiles"], out.loc[0, "n_identifiers"]) == (3, 3)
    big = with_values(design(use_cases={"salary_estimation": (5, 2)}, axes={"Religion": 6, "Gender": 5}), seed=8)
    cell = ["model", "use_case", "language", "axis"]
    out = profile_rank_agreement(big, cell).set_index(cell)
    for key, block in big.groupby(cell):
        table = block.pivot_table(index="profile_id", columns="identifier", values="value", aggfunc="mean")
        corr = stats.spearmanr(table.to_numpy()).statistic
        expected = corr[np.triu_indices(table.shape[1], 1)].mean()
        assert out.loc[key, "mean_rho"] == pytest.approx(expected, abs=1e-12)
        # transposed variant: ρ between profile rows' identifier rankings
        corr_t = stats.spearmanr(table.to_numpy().T).statistic
        alt = profile_rank_agreement(block, cell, between="profiles")["mean_rho"].iloc[0]
        assert alt == pytest.approx(corr_t[np.triu_indices(table.shape[0], 1)].mean(), abs=1e-12)
