"""Demographic recoverability and marker ablation (paper "Small Changes, Big Impact" §3.6, §4.1, App. K.1).

Input: one row per answered recoverability prompt with ``model``, ``attribute`` (``gender`` /
``ethnicity``), ``condition`` (``all``, ``-hobbies``, ..., ``none``, ``only-languages``, ...),
``truth`` and ``predicted`` (the label, ``Cannot determine``, or missing when unparseable).

Decisions:

- Macro-F1 is the unweighted mean over the **true classes** (the baskets' ethnicities or genders) of
  per-class F1; "Cannot determine" and unparseable answers are wrong for the true class and are not a
  class of their own (``sklearn.metrics.f1_score(average="macro", labels=classes, zero_division=0)``,
  which this matches to 1e-12). A class never predicted nor present has F1 0.
- The ablation curve orders the cumulative conditions by the number of categories kept (4 → 0).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

CANNOT = "Cannot determine"


def macro_f1(truth: Sequence[str] | pd.Series, predicted: Sequence[object] | pd.Series,
             classes: Sequence[str]) -> float:
    """Macro-averaged F1 over ``classes`` (see the module decisions)."""
    t = np.asarray(pd.Series(list(truth), dtype=object).fillna("\x00"), dtype=object)
    p = np.asarray(pd.Series(list(predicted), dtype=object).fillna("\x00"), dtype=object)
    if len(classes) == 0:
        return float("nan")
    scores = []
    for cls in classes:
        tp = float(np.sum((t == cls) & (p == cls)))
        fp = float(np.sum((t != cls) & (p == cls)))
        fn = float(np.sum((t == cls) & (p != cls)))
        denom = 2 * tp + fp + fn
        scores.append(2 * tp / denom if denom else 0.0)
    return float(np.mean(scores))


def recoverability(recover: pd.DataFrame, classes: dict[str, Sequence[str]]) -> pd.DataFrame:
    """Macro-F1, accuracy and the "cannot determine" share per model × attribute × condition.

    ``classes`` maps attribute -> its true classes (e.g. ``{"gender": ["Male", "Female"], ...}``).
    """
    rows = []
    for (model, attribute, condition), part in recover.groupby(["model", "attribute", "condition"], sort=False):
        truth, pred = part["truth"].astype(object), part["predicted"].astype(object)
        categories = str(part["categories"].iloc[0]) if "categories" in part.columns else ""
        rows.append({"model": model, "attribute": attribute, "condition": condition, "categories": categories,
                     "n_kept": len([c for c in categories.split("+") if c]), "n": len(part),
                     "macro_f1": macro_f1(truth, pred, list(classes[str(attribute)])),
                     "accuracy": float((truth.to_numpy() == pred.to_numpy()).mean()),
                     "cannot_share": float(pred.eq(CANNOT).mean()), "unparsed_share": float(pred.isna().mean())})
    return pd.DataFrame(rows)


def ablation_curve(table: pd.DataFrame, steps: Sequence[str]) -> pd.DataFrame:
    """The cumulative conditions in ``steps`` order (e.g. all, -hobbies, ..., none), with a ``step`` index."""
    order = {name: i for i, name in enumerate(steps)}
    curve = table[table["condition"].isin(order)].copy()
    curve["step"] = curve["condition"].map(order)
    return curve.sort_values(["model", "attribute", "step"]).reset_index(drop=True)
