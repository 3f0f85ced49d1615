"""The outcome tables' slot codes (:func:`counterbench.analyses.outcome_tables._slot_codes`) are the codes of
grouping the slot columns' text in order of appearance, whatever the columns' types and missing values."""

from __future__ import annotations

import numpy as np
import pandas as pd

from counterbench.analyses.outcome_tables import _slot_codes


def _grouped(frame: pd.DataFrame, columns: list[str]) -> np.ndarray:
    cols = [c for c in columns if c in frame.columns]
    if not cols or frame.empty:
        return np.zeros(len(frame), dtype=np.int64)
    return frame[cols].astype(str).groupby(cols, sort=False, dropna=False).ngroup().to_numpy(np.int64)


def test_slot_codes_are_the_groupings_codes() -> None:
    rng = np.random.default_rng(0)
    for _ in range(100):
        n = int(rng.integers(0, 200))
        frame = pd.DataFrame({
            "a": rng.choice(["x", "y", "z"], n), "b": rng.integers(0, 4, n), "d": rng.choice([1.5, 2.0], n),
            "c": pd.Series(rng.choice(["p", "q", None], n), dtype="str"),  # missing values: the grouping itself
            "e": pd.Categorical(rng.choice(["u", "v"], n)), "f": pd.Series(rng.choice(["1", 1], n), dtype=object)})
        for cols in (["a"], ["a", "b"], ["b", "d", "e"], ["a", "c"], ["c"], ["a", "b", "c", "d", "e", "f"], ["f"],
                     ["missing"], ["a", "missing"]):
            np.testing.assert_array_equal(_slot_codes(frame, cols), _grouped(frame, cols))
