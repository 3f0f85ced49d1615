"""``joined_keys``: a row's values of some columns as one text, a missing value as "" (pandas 3's ``astype(str)``
keeps a missing value missing, and a row-wise join failed on it)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from counterbench.analyses.slot_keys import SEPARATOR, joined_keys


def test_missing_values_of_every_dtype_are_the_empty_text() -> None:
    frame = pd.DataFrame({
        "profile_id": pd.Series(["p1", "p2", None], dtype="str"),
        "question_variant": [1, 2, 3],
        "position": [0.0, np.nan, 1.0],
        "option_order": pd.Series(["AB", None, "BA"], dtype=object),
        "level": pd.Categorical(["low", "high", None]),
    })
    keys = joined_keys(frame, ["profile_id", "question_variant", "position", "option_order", "level", "absent"])
    s = SEPARATOR
    assert keys.tolist() == [f"p1{s}1{s}0.0{s}AB{s}low", f"p2{s}2{s}{s}{s}high", f"{s}3{s}1.0{s}BA{s}"]
    assert keys.index.equals(frame.index)


def test_no_column_left_is_one_empty_key_per_row() -> None:
    frame = pd.DataFrame({"a": [1, 2]}, index=[5, 7])
    assert joined_keys(frame, ["b"]).tolist() == ["", ""]
    assert joined_keys(frame, ["b"]).index.tolist() == [5, 7]
    assert joined_keys(frame.iloc[:0], ["a"]).tolist() == []
