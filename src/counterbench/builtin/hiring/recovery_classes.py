"""Per-class demographic recoverability and the confusion matrix (paper "Small Changes, Big Impact" App. K.1,
Fig. 18).

Input: the recoverability answers of :mod:`.recoverability` (``model``, ``attribute``, ``condition``,
``truth``, ``predicted`` — a label, ``Cannot determine``, or missing when unparseable).

Decisions:

- Per true class: ``recall`` (share of its resumes answered with it), ``precision`` (share of the
  answers naming it that were right; NaN when it was never named), ``f1`` (0 when neither), and the
  ``cannot_share`` of its resumes. The mean of ``f1`` over the classes is the macro-F1 of
  :func:`.recoverability.macro_f1`.
- The confusion matrix counts every true class × every answer: the classes, ``Cannot determine`` and
  ``Unparsed`` (no label read), with ``share`` = count / the true class's resumes (rows sum to 1). Cells
  with no answers are kept as 0, so the matrix is complete.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from counterbench.builtin.hiring.recoverability import CANNOT

UNPARSED = "Unparsed"
KEYS = ["model", "attribute", "condition"]


def _answers(part: pd.DataFrame) -> pd.Series:
    return part["predicted"].astype(object).where(part["predicted"].notna(), UNPARSED).astype(str)


def class_recoverability(recover: pd.DataFrame, classes: Mapping[str, Sequence[str]]) -> pd.DataFrame:
    """Recall, precision, F1 and the "cannot determine" share per model × attribute × condition × true class."""
    rows = []
    for (model, attribute, condition), part in recover.groupby(KEYS, sort=False):
        truth, answer = part["truth"].astype(str), _answers(part)
        for cls in classes[str(attribute)]:
            n = int(truth.eq(cls).sum())
            tp = int((truth.eq(cls) & answer.eq(cls)).sum())
            named = int(answer.eq(cls).sum())
            recall = tp / n if n else float("nan")
            precision = tp / named if named else float("nan")
            denom = n + named
            rows.append({"model": model, "attribute": attribute, "condition": condition, "truth": cls, "n": n,
                         "correct": tp, "recall": recall, "precision": precision,
                         "f1": 2 * tp / denom if denom else 0.0,
                         "cannot_share": float((truth.eq(cls) & answer.eq(CANNOT)).sum() / n) if n else float("nan")})
    return pd.DataFrame(rows, columns=[*KEYS, "truth", "n", "correct", "recall", "precision", "f1", "cannot_share"])


def confusion_matrix(recover: pd.DataFrame, classes: Mapping[str, Sequence[str]]) -> pd.DataFrame:
    """Counts and row shares of every true class × answer (classes, Cannot determine, Unparsed)."""
    rows = []
    for (model, attribute, condition), part in recover.groupby(KEYS, sort=False):
        truth, answer = part["truth"].astype(str), _answers(part)
        labels = list(classes[str(attribute)])
        columns = [*labels, CANNOT, UNPARSED]
        counts = pd.crosstab(truth, answer).reindex(index=labels, columns=columns, fill_value=0).to_numpy(np.int64)
        for i, cls in enumerate(labels):
            total = int(counts[i].sum())
            for j, col in enumerate(columns):
                count = int(counts[i, j])
                rows.append({"model": model, "attribute": attribute, "condition": condition, "truth": cls,
                             "predicted": col, "count": count,
                             "share": count / total if total else float("nan")})
    return pd.DataFrame(rows, columns=[*KEYS, "truth", "predicted", "count", "share"])
