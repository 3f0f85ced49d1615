"""Several models in one sequential audit: asked in the same rounds, each stopped on its own verdicts — the same
verdicts and prompt count as each model audited alone."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from counterbench.options import RunOptions, StoppingRule
from counterbench.prompts import prompts
from counterbench.sequential import run_until_decided

pytestmark = pytest.mark.slow  # scheduled first (tests/conftest.py)


def test_models_side_by_side_stop_as_each_would_alone(tmp_path: Path) -> None:
    table = prompts("rupeebias", language=["en"], use_case=["salary_estimation", "salary_increment_estimation"])
    rule = StoppingRule(look_every=300, seed=5)
    both = run_until_decided("rupeebias", table, ["sim:biased", "sim:fair"],
                             RunOptions(store=tmp_path / "both.db", progress="off"), rule)
    assert both.stopped["sim:biased"] == "decided"
    assert both.prompts_sent["sim:biased"] < both.prompts_sent["sim:fair"] <= len(table)
    assert set(both.verdicts.loc[both.verdicts["model"] == "sim:biased", "verdict"]) == {"gap"}
    for model in ("sim:biased", "sim:fair"):
        alone = run_until_decided("rupeebias", table, [model], RunOptions(store=tmp_path / f"{model[4:]}.db",
                                                                          progress="off"), rule)
        assert alone.prompts_sent[model] == both.prompts_sent[model]
        mine = both.verdicts[both.verdicts["model"] == model].reset_index(drop=True)
        pd.testing.assert_frame_equal(mine, alone.verdicts.reset_index(drop=True))
    counts = both.summary.models
    assert counts["sim:biased"]["done"] == both.prompts_sent["sim:biased"]  # a stopped model was not asked again
    assert counts["sim:fair"]["done"] == both.prompts_sent["sim:fair"]


def test_a_report_from_the_store_of_a_sequential_audit_says_where_its_verdicts_are(tmp_path: Path) -> None:
    from counterbench.pipeline import analyze_store, run_prompts
    from counterbench.report.context import build_context
    from counterbench.report.methods import banners

    table = prompts("rupeebias", preset="quick", language=["en"])
    run_until_decided("rupeebias", table, ["sim:fair"], RunOptions(store=tmp_path / "seq.db", progress="off"),
                      StoppingRule(look_every=100))
    run_prompts(table, ["sim:fair"], store=tmp_path / "fixed.db", progress="off")
    said = {}
    for name in ("seq", "fixed"):
        data = analyze_store(tmp_path / f"{name}.db", "rupeebias", bootstrap=20, with_samples=False)
        said[name] = [b.kind for b in banners(build_context(data))]
    assert "sequential" in said["seq"] and "sequential" not in said["fixed"]
