"""A label study whose reference identity never gives the positive label: the ratio form of its gaps
(comparison / reference − 1) has no value, and the analysis says so with NaN, not numpy warnings."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import counterbench
from tests.conftest import REPO

STUDY = REPO / "examples" / "approval_crossed.yaml"
NEVER_YES = """\
description: the reference race is never approved
outcomes:
  label: {default: 0.6}
effects:
  - match: {race: white}
    add: -0.6
"""


def test_a_zero_reference_share_gives_no_ratio_and_no_runtime_warning(tmp_path: Path) -> None:
    sim = tmp_path / "never_yes.yaml"
    sim.write_text(NEVER_YES, encoding="utf-8")
    store = tmp_path / "cb.db"
    table = counterbench.prompts(str(STUDY), question_variant=[1])
    counterbench.run_prompts(table, [f"sim:{sim}"], store=store)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        result = counterbench.analyze(store, str(STUDY), bootstrap=200)
    gaps = result.tables["outcome_gaps"]
    race = gaps[(gaps["facet"] == "race") & (gaps["reference"] == "white")]
    assert len(race) == 3 and (race["reference_mean"] == 0).all()
    assert race["relative_pct"].isna().all() and race["relative_ci_low"].isna().all()
    assert race["difference"].gt(40).all()  # the gap itself, in percentage points, is there
    assert any("than white" in line for line in result.summary["findings"])
    assert not any(math.isinf(v) for v in gaps["relative_pct"].dropna())
