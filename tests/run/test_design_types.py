"""Design columns come back from the store with the types they were written with.

Prompts store their design columns as JSON; reading them back once turned every integer column into
floats (a row without the column made pandas promote it), which broke a study table parsing ``'1.0'``.
"""

from __future__ import annotations

import json

import pandas as pd

from counterbench.run.results import _design_columns


def test_integer_design_columns_come_back_as_integers() -> None:
    design = pd.Series([json.dumps({"step": 1, "cgpa": 8.5, "city": "Pune"}),
                        json.dumps({"step": 2, "cgpa": 7.0, "city": "Agra"})] * 2)
    frame = _design_columns(design, design.index)
    assert frame["step"].dtype == "int64" and list(frame["step"]) == [1, 2, 1, 2]
    assert frame["cgpa"].dtype == "float64" and frame["city"].tolist()[:2] == ["Pune", "Agra"]


def test_a_row_without_the_column_keeps_the_others_integers() -> None:
    design = pd.Series([json.dumps({"step": 3, "flag": True}), None, json.dumps({"step": 1, "flag": False})])
    frame = _design_columns(design, design.index)
    assert str(frame["step"].dtype) == "Int64" and frame["step"].tolist()[0] == 3 and frame["step"].isna()[1]
    assert frame["step"].astype(str).tolist()[2] == "1"  # never '1.0'
    assert frame["flag"].dtype != "Int64"  # booleans are not integers


def test_mixed_integer_and_text_values_are_left_alone() -> None:
    design = pd.Series([json.dumps({"level": 1}), json.dumps({"level": "high"})])
    assert _design_columns(design, design.index)["level"].tolist() == [1, "high"]
