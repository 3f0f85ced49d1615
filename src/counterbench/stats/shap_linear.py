"""SHAP attribution of an outcome to one-hot profile attributes, exact for a linear model.

("Compounding Disadvantage", Figs 3–4.)

The paper attributes MGL/MCV to the profile's attributes with SHAP (Lundberg & Lee, 2017). For a linear
model f(x) = β₀ + Σⱼ βⱼ xⱼ with the background distribution = the data (interventional / independent
features), the Shapley value of feature j for row i is exactly φᵢⱼ = βⱼ (xᵢⱼ − x̄ⱼ) — the closed form
(:func:`linear_shap`). The game v(S) = Σ_{j∈S} βⱼ (xᵢⱼ − x̄ⱼ) is additive, so an attribute taken as one
player (all its one-hot columns together) has the sum of its columns' values: :meth:`ShapResult.by_attribute`.

Decisions:

- One-hot coding keeps every level (no reference dropped); the least-squares fit uses the minimum-norm
  solution (pseudo-inverse of the normal equations), so collinear dummies share their effect — the φ's, which depend on
  f only, are the same for any solution of the normal equations (f is unique on the data's span).
- Rows with a NaN outcome are dropped; an empty or missing attribute level is its own column
  (``attribute=``) so progressive/single-attribute rows can be attributed too.
- :func:`tree_shap` (optional extra: needs ``scikit-learn`` and ``shap``) fits a gradient-boosted tree
  and uses TreeSHAP; it raises a :class:`~counterbench.errors.UserError` naming the missing package.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from counterbench.errors import UserError

__all__ = ["ShapResult", "linear_shap", "one_hot", "shap_summary", "tree_shap"]


@dataclass(frozen=True)
class ShapResult:
    """Per-row SHAP values of every one-hot feature, the fitted model and the feature → attribute map."""

    values: pd.DataFrame          # rows × one-hot features
    features: pd.DataFrame        # the one-hot design (0/1), same shape
    attribute_of: dict[str, str]  # one-hot feature -> attribute
    base_value: float             # E[f(X)] over the data
    coefficients: pd.Series       # β per one-hot feature (linear model), empty for a tree
    method: str

    def by_attribute(self) -> pd.DataFrame:
        """Rows × attributes: the sum of each attribute's one-hot SHAP values."""
        grouped = self.values.T.groupby(pd.Series(self.attribute_of), sort=False).sum().T
        return grouped


def one_hot(frame: pd.DataFrame, attributes: Sequence[str]) -> tuple[pd.DataFrame, dict[str, str]]:
    """0/1 columns ``attribute=level`` for every level present (empty level → ``attribute=``)."""
    columns: dict[str, np.ndarray] = {}
    attribute_of: dict[str, str] = {}
    for attribute in attributes:
        values = frame[attribute].fillna("").astype(str).to_numpy()
        for level in pd.unique(values):
            name = f"{attribute}={level}"
            columns[name] = (values == level).astype(np.float64)
            attribute_of[name] = attribute
    return pd.DataFrame(columns, index=frame.index), attribute_of


def linear_shap(frame: pd.DataFrame, attributes: Sequence[str], value_col: str = "y") -> ShapResult:
    """Exact SHAP values of an OLS fit of ``value_col`` on one-hot ``attributes`` (closed form, see module)."""
    rows = frame[frame[value_col].notna()]
    x, attribute_of = one_hot(rows, attributes)
    y = rows[value_col].to_numpy(dtype=np.float64)
    design = np.column_stack([np.ones(len(x)), x.to_numpy()])
    coef = np.linalg.pinv(design.T @ design) @ (design.T @ y)  # = pinv(design) @ y, the minimum-norm solution
    beta = coef[1:]
    centred = x.to_numpy() - x.to_numpy().mean(axis=0)
    values = pd.DataFrame(centred * beta, index=x.index, columns=x.columns)
    base = float((design @ coef).mean())
    return ShapResult(values, x, attribute_of, base, pd.Series(beta, index=x.columns), "linear (exact)")


def tree_shap(frame: pd.DataFrame, attributes: Sequence[str], value_col: str = "y", *, seed: int = 0,
              n_estimators: int = 200, max_depth: int = 3) -> ShapResult:
    """TreeSHAP of a gradient-boosted tree on one-hot ``attributes`` (optional: scikit-learn + shap)."""
    try:
        import shap
        from sklearn.ensemble import GradientBoostingRegressor
    except ImportError as err:
        raise UserError(f"TreeSHAP needs the optional packages scikit-learn and shap ({err.name} is missing); "
                        "pip install scikit-learn shap, or use the exact linear SHAP") from None
    rows = frame[frame[value_col].notna()]
    x, attribute_of = one_hot(rows, attributes)
    model = GradientBoostingRegressor(n_estimators=n_estimators, max_depth=max_depth, random_state=seed)
    model.fit(x.to_numpy(), rows[value_col].to_numpy(dtype=np.float64))
    explainer = shap.TreeExplainer(model)
    values = np.asarray(explainer.shap_values(x.to_numpy()), dtype=np.float64)
    expected = np.asarray(explainer.expected_value, dtype=np.float64).ravel()
    return ShapResult(pd.DataFrame(values, index=x.index, columns=x.columns), x, attribute_of,
                      float(expected[0]), pd.Series(dtype=np.float64), "TreeSHAP (gradient-boosted trees)")


def shap_summary(result: ShapResult) -> pd.DataFrame:
    """Mean |SHAP| per attribute and per one-hot feature, with the feature's mean SHAP when present/absent.

    Columns: ``feature``, ``attribute``, ``level``, ``mean_abs``, ``mean_present`` (mean φ where the
    feature is 1), ``mean_absent``, ``share`` (of rows with the feature); attribute rows have ``level``
    empty and ``feature`` = the attribute. Sorted by ``mean_abs`` within each kind.
    """
    feats = result.features
    vals = result.values
    present = feats.to_numpy() > 0.5
    with np.errstate(invalid="ignore"):
        mean_present = np.where(present.sum(0) > 0, (vals.to_numpy() * present).sum(0) / present.sum(0), np.nan)
        mean_absent = np.where((~present).sum(0) > 0, (vals.to_numpy() * ~present).sum(0) / (~present).sum(0),
                               np.nan)
    per_feature = pd.DataFrame({
        "kind": "level", "feature": vals.columns, "attribute": [result.attribute_of[c] for c in vals.columns],
        "level": [c.split("=", 1)[1] for c in vals.columns], "mean_abs": np.abs(vals.to_numpy()).mean(0),
        "mean_present": mean_present, "mean_absent": mean_absent, "share": present.mean(0),
    })
    by_attr = result.by_attribute()
    per_attr = pd.DataFrame({"kind": "attribute", "feature": by_attr.columns, "attribute": by_attr.columns, "level": "",
                             "mean_abs": np.abs(by_attr.to_numpy()).mean(0), "mean_present": np.nan,
                             "mean_absent": np.nan, "share": np.nan})
    out = pd.concat([per_attr.sort_values("mean_abs", ascending=False, kind="mergesort"),
                     per_feature.sort_values("mean_abs", ascending=False, kind="mergesort")], ignore_index=True)
    return out
