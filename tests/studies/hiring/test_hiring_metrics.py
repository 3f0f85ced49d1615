"""Hand-worked cases of the hiring metrics and cross-checks against scipy / scikit-learn (to 1e-9)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import f1_score

from counterbench.builtin.hiring.metrics import (
    augmented_points,
    bias_summary,
    relative_advantage,
    score_means,
    top_score_rates,
    win_rates,
)
from counterbench.builtin.hiring.ordering import group_ordering, rationale_effect, sign_test
from counterbench.builtin.hiring.recoverability import CANNOT, macro_f1


def _scores(rows):
    return pd.DataFrame([{"model": "m", "rationale": False, "job_id": j, "group": g, "variation": v, "score": s}
                         for j, g, v, s in rows])


def test_top_score_rate_counts_ties_for_every_tied_group():
    # job 1: X and Y tie at the top (both count), the neutral resume is below
    # job 2: the neutral resume and one X variation tie at 90 (X and neutral count, Y does not)
    # job 3: Y alone at the top; X's only valid score is missing in job 4, so X has 3 jobs there
    rows = [
        ("j1", "neutral", 0, 70), ("j1", "X", 1, 88), ("j1", "X", 2, 80), ("j1", "Y", 1, 88), ("j1", "Y", 2, 60),
        ("j2", "neutral", 0, 90), ("j2", "X", 1, 90), ("j2", "X", 2, 89), ("j2", "Y", 1, 85), ("j2", "Y", 2, 85),
        ("j3", "neutral", 0, 50), ("j3", "X", 1, 50), ("j3", "X", 2, 49), ("j3", "Y", 1, 51), ("j3", "Y", 2, 20),
        ("j4", "neutral", 0, 60), ("j4", "X", 1, np.nan), ("j4", "Y", 1, 60),
    ]
    tsr = top_score_rates(_scores(rows)).set_index("group")
    assert tsr.loc["X", ["n_jobs", "top_jobs"]].tolist() == [3, 2]  # j1, j2 of j1–j3
    assert tsr.loc["Y", ["n_jobs", "top_jobs"]].tolist() == [4, 3]  # j1, j3, j4
    assert tsr.loc["neutral", ["n_jobs", "top_jobs"]].tolist() == [4, 2]  # j2, j4
    assert tsr.loc["X", "tsr"] == pytest.approx(200 / 3)
    assert tsr.loc["Y", "tsr"] == 75.0
    # all 41 resumes tied: every group at 100 %, the ideal
    tied = _scores([("j", g, v, 70) for g in ("neutral", "X", "Y") for v in (1, 2)])
    assert set(top_score_rates(tied)["tsr"]) == {100.0}


def _comparisons(rows):
    return pd.DataFrame([{"model": "m", "rationale": False, "condition": "all", "job_id": j, "group": g,
                          "variation": 1, "position": p, "verdict": v} for j, g, p, v in rows])


def test_win_rate_points_positions_and_ideal():
    rows = [("j1", "X", "A", "A"), ("j1", "X", "B", "A"),      # win then loss -> 0.5
            ("j2", "X", "A", "Tie"), ("j2", "X", "B", "B"),    # tie then win -> 0.75
            ("j1", "Y", "A", "B"), ("j1", "Y", "B", None),     # loss, unparseable -> 0 (one position)
            ("j2", "Y", "A", "A"), ("j2", "Y", "B", "B")]      # wins in both -> 1
    frame = _comparisons(rows)
    assert augmented_points(frame).tolist()[:4] == [1.0, 0.0, 0.5, 1.0]
    wr = win_rates(frame, n_boot=200).set_index("group")
    assert wr.loc["X", "win_rate"] == pytest.approx(0.625)
    assert wr.loc["Y", "win_rate"] == pytest.approx(0.5)
    assert wr.loc["X", "n_comparisons"] == 2
    summary = bias_summary(wr.reset_index(), pd.DataFrame(columns=["model", "rationale", "group", "tsr"]))
    row = summary.iloc[0]
    assert row["disparity"] == pytest.approx(0.125)
    assert row["deviation"] == pytest.approx(abs(0.5625 - 0.5) / 0.5)


def test_a_cell_with_only_the_neutral_resume_has_no_summary_row():
    tsr = pd.DataFrame({"model": "m", "rationale": [False, True, True], "group": ["neutral", "neutral", "X"],
                        "tsr": [10.0, 20.0, 80.0]})
    wr = pd.DataFrame({"model": "m", "rationale": False, "group": ["neutral"], "win_rate": [0.5]})
    summary = bias_summary(wr, tsr)
    assert summary[["setting", "rationale", "n_groups"]].values.tolist() == [["score", True, 1]]


def test_score_summary_relative_advantage_and_deviation():
    tsr = pd.DataFrame({"model": "m", "rationale": False, "group": ["neutral", "X", "Y"], "tsr": [10.0, 80.0, 40.0]})
    wr = pd.DataFrame(columns=["model", "rationale", "group", "win_rate"])
    row = bias_summary(wr, tsr).iloc[0]
    assert (row["disparity"], row["deviation"]) == (pytest.approx(0.4), pytest.approx(0.4))
    rel = relative_advantage(tsr, "tsr").set_index("group")["relative_advantage"]
    assert rel["X"] == pytest.approx(100 * (80 - 60) / 60) and "neutral" not in rel.index
    scores = _scores([(f"j{j}", g, 1, s) for j in range(6) for g, s in (("neutral", 50), ("X", 62), ("Y", 58))])
    means = score_means(scores, n_boot=300).set_index("group")
    # the marked difference is from the neutral resume; the one from the mean over groups is descriptive
    assert means.loc["X", "diff"] == pytest.approx(12.0) and means.loc["Y", "diff"] == pytest.approx(8.0)
    assert means.loc["X", "diff_low"] == pytest.approx(12.0)  # no variation across jobs: a point interval
    assert means.loc["X", "diff_mean"] == pytest.approx(2.0) and means.loc["Y", "diff_mean"] == pytest.approx(-2.0)
    assert means.loc["X", "diff_mean_low"] == pytest.approx(2.0)
    assert np.isnan(means.loc["neutral", "diff"]) and means.loc["neutral", "diff_mean"] == pytest.approx(-10.0)


def test_the_score_difference_pairs_each_group_with_its_jobs_neutral_resume():
    # j1: neutral 50, X 60 and 64 (mean 62) -> +12; j2: neutral 80, X 81 -> +1; j3: the neutral score is
    # unparseable, so X's 99 there is left out of the paired difference (not compared with other jobs)
    rows = [("j1", "neutral", 0, 50), ("j1", "X", 1, 60), ("j1", "X", 2, 64),
            ("j2", "neutral", 0, 80), ("j2", "X", 1, 81),
            ("j3", "neutral", 0, np.nan), ("j3", "X", 1, 99)]
    means = score_means(_scores(rows), n_boot=200).set_index("group")
    assert means.loc["X", "diff"] == pytest.approx((12 + 1) / 2)
    assert means.loc["X", "mean_score"] == pytest.approx((60 + 64 + 81 + 99) / 4)
    assert means.loc["X", "n_clusters"] == 2  # the jobs with a paired difference (each its own unit here)


def test_friedman_and_kendalls_w_match_scipy():
    rng = np.random.default_rng(7)
    for trial in range(20):
        m, k = rng.integers(3, 19), 8
        matrix = rng.normal(size=(m, k)) + np.arange(k) * rng.uniform(0, 0.5)
        if trial % 3 == 0:
            matrix = np.round(matrix, 0)  # ties within models
        values = pd.DataFrame([{"model": f"m{i}", "rationale": False, "group": f"g{j}", "v": matrix[i, j]}
                               for i in range(m) for j in range(k)])
        ranks, tests = group_ordering(values, "v")
        ref = stats.friedmanchisquare(*matrix.T)
        row = tests.iloc[0]
        assert row["chi2"] == pytest.approx(ref.statistic, abs=1e-9)
        assert row["p_value"] == pytest.approx(ref.pvalue, abs=1e-9)
        assert row["kendalls_w"] == pytest.approx(ref.statistic / (m * (k - 1)), abs=1e-9)
        expected = stats.rankdata(-matrix, axis=1).mean(axis=0)
        assert ranks["average_rank"].to_numpy() == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("n", [1, 5, 12, 18, 30])
def test_sign_test_matches_binomtest(n):
    for worsened in range(n + 1):
        ref = stats.binomtest(worsened, n, 0.5, alternative="two-sided").pvalue
        assert sign_test(worsened, n - worsened) == pytest.approx(ref, abs=1e-9)


def test_rationale_effect_counts_and_sign_test():
    rows = []
    for i, delta in enumerate([0.02, 0.01, -0.01, 0.03, 0.0, 0.05]):
        for rationale, value in ((False, 0.1), (True, 0.1 + delta)):
            rows.append({"model": f"m{i}", "setting": "compare", "rationale": rationale, "disparity": value,
                         "deviation": value})
    deltas, tests = rationale_effect(pd.DataFrame(rows), n_boot=500)
    row = tests[tests["metric"].eq("disparity")].iloc[0]
    assert (row["improved"], row["worsened"], row["unchanged"]) == (1, 4, 1)
    assert row["p_value"] == pytest.approx(stats.binomtest(4, 5).pvalue, abs=1e-12)
    assert row["mean_delta"] == pytest.approx(0.1 / 6)
    assert row["delta_low"] <= row["mean_delta"] <= row["delta_high"]
    assert len(deltas) == 12


def test_macro_f1_matches_sklearn_with_cannot_determine_counted_wrong():
    rng = np.random.default_rng(3)
    classes = ["Chinese", "Malay", "Indian", "Caucasian"]
    for _ in range(30):
        n = int(rng.integers(5, 200))
        truth = rng.choice(classes, n)
        predicted = np.where(rng.random(n) < 0.6, truth, rng.choice([*classes, CANNOT], n)).astype(object)
        predicted[rng.random(n) < 0.05] = None  # unparseable
        ref = f1_score(truth, np.where(pd.isna(predicted), "unparsed", predicted).astype(str), labels=classes,
                       average="macro", zero_division=0)
        assert macro_f1(truth, predicted, classes) == pytest.approx(ref, abs=1e-9)
    # everything "cannot determine": F1 0, not undefined
    assert macro_f1(["Male", "Female"], [CANNOT, CANNOT], ["Male", "Female"]) == 0.0
