"""Python studies: intersectional profiles and two identities per prompt, and one registered by entry point."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import counterbench
from tests.conftest import REPO
from tests.studies.python_studies import MiniIntersectional, MiniTwoCandidates


def test_intersectional_prompts_carry_each_attribute_as_a_column() -> None:
    table = counterbench.prompts(MiniIntersectional())
    assert len(table) == 4 * 2 * 6
    assert {"gender", "caste", "topic"} <= set(table.columns)
    assert set(table["answer_type"]) == {"score:1:5"}
    assert table["prompt_id"].is_unique and table["prompt_id"].iloc[0] == "level_en_00001"
    row = table.iloc[1]
    assert row["caste"] in row["user"] and row["gender"] in row["user"]


def test_two_candidates_in_both_positions_are_mapped_back_to_people(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # a relative sim path: the model's name, and so its seeded answers, are fixed
    sim = tmp_path / "sim.yaml"
    sim.write_text("planted: Jamal is picked 20 points less often whichever position he is in\n"
                   "effects:\n  - {match: {option_B: Jamal}, add: 0.2}\n  - {match: {option_A: Jamal}, add: -0.2}\n")
    study = MiniTwoCandidates()
    table = counterbench.prompts(study)
    assert len(table) == 6 * 2 * 10 * 2 and set(table["answer_type"]) == {"choice:A|B"}
    store = tmp_path / "cb.db"
    counterbench.run_prompts(table, ["sim:sim.yaml"], store=store)
    result = counterbench.analyze(store, study, bootstrap=300)
    levels = result.tables["outcome_levels"].set_index("level")
    assert levels.loc["Jamal", "mean"] == pytest.approx(30.0, abs=8)
    gaps = result.tables["outcome_gaps"].set_index("comparison")
    jamal = gaps.loc["Jamal"]
    assert jamal["reference"] == "Emily" and jamal["difference"] < 0
    assert jamal["ci_low"] <= -40.0 <= jamal["ci_high"]
    assert not bool(gaps.loc["Greg", "significant"])


@pytest.fixture
def entry_point_path(tmp_path: Path) -> Path:
    """A dist-info folder that registers the intersectional study under the group counterbench.studies."""
    dist = tmp_path / "site" / "counterbench_teststudies-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: counterbench-teststudies\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[counterbench.studies]\nmini_intersectional = tests.studies.python_studies:intersectional_factory\n")
    return tmp_path / "site"


@pytest.mark.slow
def test_a_study_registered_by_entry_point_is_listed_and_audited(
    cli: Callable[..., Any], entry_point_path: Path, tmp_path: Path
) -> None:
    env = {"PYTHONPATH": os.pathsep.join([str(entry_point_path), str(REPO), str(REPO / "src"),
                                          os.environ.get("PYTHONPATH", "")]),
           "COUNTERBENCH_PLUGINS": ""}  # the suite keeps to built-in entry points; this test adds one
    listed = cli("studies", env=env)
    assert listed.returncode == 0, listed.stderr
    assert "mini_intersectional" in listed.stdout and "counterbench-teststudies" in listed.stdout
    sim = tmp_path / "sim.yaml"
    sim.write_text("planted: Dalit students get a level 0.8 lower\noutcomes: {score: {default: 3.4}}\n"
                   "effects:\n  - {match: {caste: Dalit}, add: -0.8}\n")
    out = tmp_path / "audit"
    proc = cli("audit", "mini_intersectional", "--model", "sim:sim.yaml", "--store", str(tmp_path / "cb.db"),
               "--out", str(out), "--bootstrap", "500", "--no-progress", env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "Explanation level by student profile audit report" in html
    gaps = pd.read_csv(out / "analysis" / "outcome_gaps.csv")
    dalit = gaps[(gaps["facet"] == "caste") & (gaps["comparison"] == "Dalit")].iloc[0]
    assert dalit["ci_low"] <= -0.8 <= dalit["ci_high"] and dalit["ci_high"] < 0
    profile = gaps[gaps["facet"] == "profile"]
    assert set(profile["comparison"]) == {"boy · Dalit", "boy · OBC", "girl · Brahmin", "girl · Dalit", "girl · OBC"}
