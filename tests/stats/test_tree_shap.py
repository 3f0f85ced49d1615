"""TreeSHAP (optional ``shap`` extra) against a brute-force Shapley computation of the same tree game.

``shap.TreeExplainer`` without background data explains the *path-dependent* game: v(S) = the tree's
expected output when only the features in S are known, unknown splits being averaged over the training
cover of each branch. That game is computed here from the fitted scikit-learn trees directly and its
Shapley values by enumerating every coalition — an independent check of :func:`tree_shap` to 1e-9.
"""

from __future__ import annotations

import importlib.util
import itertools
from math import factorial

import numpy as np
import pandas as pd
import pytest

from counterbench.errors import UserError
from counterbench.stats.shap_linear import shap_summary, tree_shap

if importlib.util.find_spec("shap") is None or importlib.util.find_spec("sklearn") is None:  # not imported here
    pytest.skip("the optional shap extra is not installed", allow_module_level=True)


def _frame(n: int = 160, seed: int = 4) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"income": rng.choice(["High", "Middle", "Low"], n),
                          "disability": rng.choice(["Able-bodied", "Disabled"], n),
                          "gender": rng.choice(["Male", "Female"], n)})
    frame["y"] = (11.0 - 1.5 * frame["disability"].eq("Disabled") - 0.6 * frame["income"].eq("Low")
                  + rng.normal(0, 0.5, n))
    return frame


def _tree_value(tree: object, x: np.ndarray, known: frozenset[int]) -> float:
    """E[tree(x) | x_known] under the tree's training cover (the path-dependent game)."""
    t = tree.tree_  # type: ignore[attr-defined]

    def walk(node: int) -> float:
        left, right = t.children_left[node], t.children_right[node]
        if left == -1:
            return float(t.value[node].ravel()[0])
        feature = t.feature[node]
        if feature in known:
            return walk(left if x[feature] <= t.threshold[node] else right)
        cover_l, cover_r = t.weighted_n_node_samples[left], t.weighted_n_node_samples[right]
        return (cover_l * walk(left) + cover_r * walk(right)) / (cover_l + cover_r)

    return walk(0)


def _brute_force(model: object, x: np.ndarray) -> np.ndarray:
    """Shapley values of every feature of the path-dependent game of a gradient-boosted ensemble."""
    trees = [est[0] for est in model.estimators_]  # type: ignore[attr-defined]
    rate = model.learning_rate  # type: ignore[attr-defined]
    m = len(x)
    cache: dict[frozenset[int], float] = {}

    def value(subset: frozenset[int]) -> float:
        if subset not in cache:
            cache[subset] = rate * sum(_tree_value(tree, x, subset) for tree in trees)
        return cache[subset]

    phi = np.zeros(m)
    for j in range(m):
        others = [k for k in range(m) if k != j]
        for size in range(m):
            weight = factorial(size) * factorial(m - size - 1) / factorial(m)
            for subset in itertools.combinations(others, size):
                s = frozenset(subset)
                phi[j] += weight * (value(s | {j}) - value(s))
    return phi


def test_tree_shap_equals_brute_force_shapley_of_the_tree_game() -> None:
    frame = _frame()
    attrs = ["income", "disability", "gender"]
    result = tree_shap(frame, attrs, n_estimators=12, max_depth=3, seed=1)
    from sklearn.ensemble import GradientBoostingRegressor

    model = GradientBoostingRegressor(n_estimators=12, max_depth=3, random_state=1)
    x = result.features.to_numpy()
    model.fit(x, frame["y"].to_numpy(dtype=np.float64))  # the same fit as inside tree_shap (same seed)
    for i in (0, 7, 33, 101):
        brute = _brute_force(model, x[i])
        assert np.abs(brute - result.values.to_numpy()[i]).max() <= 1e-9
    # efficiency: base value + Σφ = the model's prediction, for every row
    assert np.abs(result.values.sum(axis=1).to_numpy() + result.base_value - model.predict(x)).max() <= 1e-9
    assert result.method.startswith("TreeSHAP")
    top = shap_summary(result)
    assert top[top["kind"].eq("attribute")].iloc[0]["attribute"] == "disability"  # the planted effect


def test_tree_shap_names_a_missing_package(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_shap(name: str, *args: object, **kwargs: object) -> object:
        if name == "shap":
            raise ImportError("No module named 'shap'", name="shap")
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_shap)
    with pytest.raises(UserError, match="shap is missing"):
        tree_shap(_frame(40), ["income"])
