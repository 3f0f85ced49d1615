"""The crossed regression when a sample of combinations leaves out an attribute's reference level.

Found by the study generator: a crossed design with ``sample`` whose combinations never held the reference
of one attribute gave that attribute's other levels dummies summing to the constant, and a model with no
effect at all got "marked" coefficients of +13 to +17 with tiny standard errors. The regression now takes
the first level that is there as the reference (and says so), and skips a cell whose sampled levels are
confounded.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from counterbench.analyses.crossed_regression import crossed_regression
from counterbench.studies.base import Facet

FACETS = (Facet("origin", "origin", ("Ref", "B", "C"), "Ref", None, "attribute"),
          Facet("age", "age", ("30", "50"), "30", None, "attribute"))
SLOTS = ["use_case", "language", "profile_id", "question_variant"]


def _rows(combos: list[tuple[str, str]], seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frames = [pd.DataFrame({"model": "m", "use_case": "u", "kind": "score", "language": "en",
                            "profile_id": [f"P{i}" for i in range(20)], "question_variant": 1, "origin": o, "age": a,
                            "y": 50 + rng.normal(0, 3, 20)}) for o, a in combos]
    return pd.concat(frames, ignore_index=True)


def test_a_missing_reference_is_replaced_by_the_first_level_there_and_nothing_is_marked() -> None:
    table = crossed_regression(_rows([("B", "30"), ("B", "50"), ("C", "30"), ("C", "50")]), FACETS, SLOTS)
    origin = table[table["attribute"] == "origin"]
    assert list(origin["reference"]) == ["B"] and list(origin["level"]) == ["C"], table
    assert abs(float(origin["estimate"].iloc[0])) < 5 and not table["significant"].astype(bool).any(), table


def test_confounded_sampled_levels_give_no_estimate() -> None:
    # origin C only ever with age 50 and B only with 30: the two attributes cannot be told apart
    assert crossed_regression(_rows([("B", "30"), ("C", "50")]), FACETS, SLOTS).empty
