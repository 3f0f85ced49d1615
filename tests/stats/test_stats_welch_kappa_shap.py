"""Welch t / Cohen's d / BH, Cohen's κ, linear SHAP and z-bias, cross-checked against independent code."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from math import factorial

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.multitest import multipletests

from counterbench.stats.agreement import cohen_kappa, interpret_kappa
from counterbench.stats.shap_linear import linear_shap, one_hot, shap_summary
from counterbench.stats.welch import cohens_d, pairwise_welch, welch_t
from counterbench.stats.zbias import group_scores, mab_mdb, zscore_within


def test_welch_matches_scipy_on_many_samples() -> None:
    rng = np.random.default_rng(11)
    for _ in range(200):
        na, nb = rng.integers(2, 60, size=2)
        a = rng.normal(rng.normal(), rng.uniform(0.1, 3), na)
        b = rng.normal(rng.normal(), rng.uniform(0.1, 3), nb)
        t, df, p = welch_t(a, b)
        ref = stats.ttest_ind(a, b, equal_var=False)
        assert abs(t - ref.statistic) <= 1e-9 and abs(p - ref.pvalue) <= 1e-9 and abs(df - ref.df) <= 1e-9


def test_cohens_d_by_hand() -> None:
    a, b = np.array([2.0, 4.0, 6.0, 8.0]), np.array([1.0, 2.0, 3.0])
    # means 5 and 2; sample variances 20/3 and 1; pooled-average SD sqrt((20/3 + 1) / 2)
    assert abs(cohens_d(a, b) - 3.0 / np.sqrt((20 / 3 + 1) / 2)) <= 1e-12
    assert np.isnan(cohens_d([1.0], [2.0, 3.0])) and np.isnan(cohens_d([1.0, 1.0], [1.0, 1.0]))


def test_pairwise_family_matches_scipy_and_statsmodels() -> None:
    rng = np.random.default_rng(3)
    n = 900
    frame = pd.DataFrame({"model": rng.choice(["m1", "m2"], n), "income": rng.choice(["High", "Middle", "Low"], n),
                          "gender": rng.choice(["Male", "Female", "Non-binary", ""], n)})
    frame["y"] = rng.normal(size=n) - 0.4 * frame["income"].eq("Low")
    levels = {"income": ("High", "Middle", "Low"), "gender": ("Male", "Female", "Non-binary")}
    table = pairwise_welch(frame, ["model"], levels)
    assert len(table) == 2 * (3 + 3)
    for row in table.to_dict("records"):
        sel = frame[frame["model"].eq(row["model"])]
        a = sel.loc[sel[row["attribute"]].eq(row["level_a"]), "y"]
        b = sel.loc[sel[row["attribute"]].eq(row["level_b"]), "y"]
        ref = stats.ttest_ind(a, b, equal_var=False)
        assert abs(row["t"] - ref.statistic) <= 1e-9 and abs(row["p"] - ref.pvalue) <= 1e-9
        assert abs(row["d"] - cohens_d(a, b)) <= 1e-12 and (row["n_a"], row["n_b"]) == (len(a), len(b))
    reject, adjusted, _, _ = multipletests(table["p"], alpha=0.05, method="fdr_bh")
    assert np.allclose(table["p_fdr"], adjusted, rtol=0, atol=1e-9)
    assert (table["significant"].to_numpy() == reject).all()
    # level order sets the sign: High before Low, so High − Low > 0 where Low is penalised
    low = table[(table["level_a"].eq("High")) & table["level_b"].eq("Low")]
    assert (low["d"] > 0).all()


def test_kappa_matches_sklearn() -> None:
    rng = np.random.default_rng(5)
    for _ in range(50):
        x = rng.integers(1, 6, 300)
        y = np.where(rng.random(300) < 0.4, x, rng.integers(1, 6, 300))
        plain = cohen_kappa(x, y, categories=[1, 2, 3, 4, 5])
        weighted = cohen_kappa(x, y, weights="linear", categories=[1, 2, 3, 4, 5])
        assert abs(plain.kappa - cohen_kappa_score(x, y, labels=[1, 2, 3, 4, 5])) <= 1e-9
        assert abs(weighted.kappa - cohen_kappa_score(x, y, labels=[1, 2, 3, 4, 5], weights="linear")) <= 1e-9
        assert abs(plain.observed - (x == y).mean()) <= 1e-12
    with_nan = cohen_kappa([1, 2, np.nan, 3], [1, 2, 2, None], categories=[1, 2, 3])
    assert with_nan.n == 2 and with_nan.kappa == 1.0
    assert [interpret_kappa(k) for k in (-0.1, 0.1, 0.3, 0.5, 0.7, 0.9)] == [
        "poor", "slight", "fair", "moderate", "substantial", "almost perfect"]


def _brute_force_shapley(predict: Callable[[np.ndarray], np.ndarray], x_row: np.ndarray, background: np.ndarray,
                         groups: list[list[int]]) -> np.ndarray:
    """Exact Shapley values of ``groups`` of columns, interventional expectation over ``background``."""
    m = len(groups)
    phi = np.zeros(m)

    def value(coalition: tuple[int, ...]) -> float:
        data = background.copy()
        for g in coalition:
            data[:, groups[g]] = x_row[groups[g]]
        return float(predict(data).mean())

    for j in range(m):
        others = [g for g in range(m) if g != j]
        for size in range(m):
            for subset in itertools.combinations(others, size):
                phi[j] += _weight(size, m) * (value((*subset, j)) - value(subset))
    return phi


def _weight(size: int, m: int) -> float:
    return factorial(size) * factorial(m - size - 1) / factorial(m)


def test_linear_shap_equals_brute_force_shapley() -> None:
    rng = np.random.default_rng(9)
    n = 120
    frame = pd.DataFrame({"income": rng.choice(["High", "Middle", "Low"], n),
                          "disability": rng.choice(["No", "Yes"], n),
                          "gender": rng.choice(["M", "F", "X"], n)})
    frame["y"] = 10 - 1.5 * frame["disability"].eq("Yes") - 0.7 * frame["income"].eq("Low") + rng.normal(0, 1, n)
    attrs = ["income", "disability", "gender"]
    result = linear_shap(frame, attrs)
    x, attribute_of = one_hot(frame, attrs)
    design = np.column_stack([np.ones(n), x.to_numpy()])
    coef = np.concatenate([[0.0], result.coefficients.to_numpy()])
    intercept = float((frame["y"].to_numpy() - x.to_numpy() @ result.coefficients.to_numpy()).mean())
    coef[0] = intercept

    def predict(data: np.ndarray) -> np.ndarray:
        return np.column_stack([np.ones(len(data)), data]) @ coef

    # f is the least-squares fit: its residuals are orthogonal to the design
    assert np.abs(design.T @ (frame["y"].to_numpy() - predict(x.to_numpy()))).max() < 1e-8
    groups = [[i for i, c in enumerate(x.columns) if attribute_of[c] == a] for a in attrs]
    by_attr = result.by_attribute()
    for i in (0, 5, 17, 64):
        brute = _brute_force_shapley(predict, x.to_numpy()[i], x.to_numpy(), groups)
        assert np.abs(brute - by_attr.iloc[i][attrs].to_numpy()).max() <= 1e-9
    # efficiency: SHAP values sum to f(x) − E f(X)
    assert np.allclose(result.values.sum(axis=1) + result.base_value, predict(x.to_numpy()), atol=1e-9)
    summary = shap_summary(result)
    top = summary[summary["kind"].eq("attribute")].iloc[0]["attribute"]
    assert top == "disability"


def test_linear_shap_matches_shap_package_when_installed() -> None:
    shap = pytest.importorskip("shap")
    rng = np.random.default_rng(2)
    frame = pd.DataFrame({"a": rng.choice(["p", "q", "r"], 80), "b": rng.choice(["s", "t"], 80)})
    frame["y"] = rng.normal(size=80) + frame["a"].eq("p")
    result = linear_shap(frame, ["a", "b"])
    explainer = shap.LinearExplainer((result.coefficients.to_numpy(), 0.0), result.features.to_numpy())
    values = explainer.shap_values(result.features.to_numpy())
    assert np.abs(values - result.values.to_numpy()).max() <= 1e-9


def test_zbias_mab_mdb_by_hand() -> None:
    frame = pd.DataFrame({"cell": "c", "income": ["High"] * 2 + ["Low"] * 2 + ["Middle"] * 2,
                          "y": [4.0, 6.0, 1.0, 3.0, 2.0, 4.0]})
    z = zscore_within(frame, ["cell"])
    assert np.allclose(z, (frame["y"] - frame["y"].mean()) / frame["y"].std(ddof=1))
    scores = group_scores(frame, ["cell"], {"income": ("High", "Middle", "Low")})
    assert list(scores["level"]) == ["High", "Middle", "Low"]
    assert np.allclose(scores["mean"], [5.0, 3.0, 2.0])
    bias = mab_mdb(scores, ["cell"]).iloc[0]
    ref = 10.0 / 3.0  # unweighted mean of group means
    assert abs(bias["mab"] - np.mean(np.abs(np.array([5.0, 3.0, 2.0]) - ref))) <= 1e-12
    assert bias["mdb"] == 3.0 and bias["extreme_level"] == "High" and bias["extreme_dev"] > 0
    sd = frame["y"].std(ddof=1)
    assert abs(bias["mdb_z"] - 3.0 / sd) <= 1e-12 and abs(bias["mab_z"] - bias["mab"] / sd) <= 1e-12
