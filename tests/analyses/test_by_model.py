"""Analysing a store model by model gives exactly the joint analysis (tables, ranks, q-values, summary)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from counterbench.families.amount.analysis import analyze
from counterbench.families.amount.by_model import analyze_by_model, combine_results
from counterbench.prompts import prompts
from counterbench.run.results import load_results
from tests.analyses.simlaw import PLANTED, simulate_results


def _same(joint: dict[str, pd.DataFrame], combined: dict[str, pd.DataFrame]) -> None:
    assert list(joint) == list(combined)
    for name, table in joint.items():
        pd.testing.assert_frame_equal(table, combined[name], obj=name)


def test_combining_per_model_analyses_equals_the_joint_analysis() -> None:
    table = prompts("rupeebias", use_case=["salary_estimation"], sample_slots=30)
    frames = [simulate_results(table, f"sim:m{i}", effects={k: 1 + (v - 1) * i / 3 for k, v in PLANTED.items()},
                               noise_sd=0.03, refusal_rate=0.01, malformed_rate=0.01, seed=i) for i in range(3)]
    joint = analyze(pd.concat(frames, ignore_index=True), bootstrap=50, seed=0)
    combined = combine_results([analyze(frame, bootstrap=50, seed=0) for frame in frames])
    _same(joint.tables, combined.tables)
    assert list(joint.tables["leaderboard"]["model"]) == ["sim:m0", "sim:m1", "sim:m2"]  # ranks across models
    assert joint.tables["kendalls_w"]["q_bh_all"].notna().any()
    differing = {k for k in joint.summary if joint.summary[k] != combined.summary[k]}
    assert differing <= {"analysed_at"}


def test_a_store_is_read_one_model_at_a_time(sim_store: Path) -> None:
    asked: list[tuple[list[str], int]] = []

    def load(model: str) -> pd.DataFrame:
        frame = load_results(sim_store, [model], "default")
        asked.append(([model], int(frame["model"].nunique())))
        return frame

    by_model = analyze_by_model(load, ["sim:biased", "sim:fair"], profile="default", bootstrap=20, seed=1, tau=10.0,
                                canonical_pairs=None)
    assert asked == [(["sim:biased"], 1), (["sim:fair"], 1)]
    joint = analyze(load_results(sim_store, profile="default"), bootstrap=20, seed=1)
    _same(joint.tables, by_model.tables)
