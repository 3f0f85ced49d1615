"""The paper's remaining headline numbers: each table recovers a planted effect, its mark's null reference
holds on null models (a per-profile random effect, nothing planted), and the report shows every section.

Planted (on top of nothing, or of ``sim:stem``): Hindi/Regional-medium IIT students −2.6 grade levels
(within-IIT medium gap), English-medium students +2 (top decile), Disabled −1.5 (``sim:stem``: the
within-IIT disability gap in the ablation, SHAP at the progressive experiment's last step).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from counterbench.builtin.stem import analysis as A
from counterbench.builtin.stem import subgroups as G
from counterbench.builtin.stem import summaries as S
from counterbench.builtin.stem.design import StemDesign, build_prompt_table
from counterbench.builtin.stem.simulate import simulate_outcomes
from counterbench.models.sim_effects import Effect
from counterbench.models.simulated import load_profile
from counterbench.stats.agreement import cohen_kappa
from counterbench.stats.shap_linear import linear_shap
from counterbench.stats.zbias import group_scores, mab_mdb

pytestmark = pytest.mark.slow  # scheduled first (tests/conftest.py)

IIT_MEDIUM = Effect(match={"use_case": ("generation",), "college_tier": ("IIT",), "medium": ("Hindi/Regional",)},
                    add=-2.6)
ENGLISH = Effect(match={"use_case": ("generation",), "medium": ("English",)}, add=2.0)


@pytest.fixture(scope="module")
def india() -> pd.DataFrame:
    """India's main experiment (generation), its progressive experiment and ablation, its single-attribute
    replication."""
    return build_prompt_table(StemDesign.paper(contexts=("india",), progressive=("india",),
                                               single_attribute=("india",), tasks=("generation",)))


def _outcomes(table: pd.DataFrame, model: str, effects: tuple[Effect, ...], seed: int,
              profile_sd: float = 0.0, *, complete: bool = False) -> pd.DataFrame:
    preset = replace(load_profile("stem"), effects=effects)
    if complete:  # every prompt answered (no refusals, nothing malformed)
        preset = replace(preset, refusal_rate=0.0, malformed_rate=0.0)
    return A.outcome_frame(simulate_outcomes(table, model, preset=preset, seed=seed, profile_sd=profile_sd))


def test_the_within_iit_gaps_are_found(india: pd.DataFrame) -> None:
    frame = _outcomes(india, "sim:iit", (*load_profile("stem").effects, IIT_MEDIUM), seed=3)
    gaps = G.within_gap_table(frame).set_index(["experiment", "attribute"])
    medium = gaps.loc[("main", "medium")]
    assert medium["comparison"] == "English − Hindi/Regional" and medium["within"] == "college_tier = IIT"
    assert medium["test"] == "permutation" and medium["n_units"] >= 3
    assert 1.8 < medium["gap"] < 3.4 and medium["significant"]  # planted 2.6
    disability = gaps.loc[("ablation", "disability")]
    assert disability["test"] == "matched swap" and disability["n_units"] == 36  # 3 genders × 3 incomes × 4 castes
    assert 1.0 < disability["gap"] < 2.0 and disability["significant"]  # planted 1.5 (sim:stem)
    assert not gaps.loc[("main", "caste"), "significant"]  # nothing planted on caste
    assert "2.62–2.64" in medium["paper"]


def test_the_top_decile_is_english_medium_when_planted(india: pd.DataFrame) -> None:
    deciles = G.decile_table(_outcomes(india, "sim:english", (ENGLISH,), seed=5))
    top = deciles[deciles["end"].eq("top") & deciles["attribute"].eq("medium")].set_index("level")
    # every top profile is English-medium, but 63 of the 100 are: a random tenth is all English with p ≈ 0.63¹⁰,
    # so "100% of the top decile" is weak evidence on its own (not marked after BH over 16 tests)
    assert top.loc["English", "share_end"] == 1.0 and top.loc["English", "n_level"] == 63
    assert 0.005 < top.loc["English", "p_value"] < 0.02
    assert top.loc["English", "n_end"] == 10 and top.loc["English", "n_profiles"] == 100
    bottom = deciles[deciles["end"].eq("bottom") & deciles["attribute"].eq("medium")].set_index("level")
    assert bottom.loc["Hindi/Regional", "share_end"] > 0.8 and bottom.loc["Hindi/Regional", "significant"]
    assert not deciles[deciles["attribute"].ne("medium")]["significant"].any()


def test_progressive_shap_finds_disability_and_equals_the_response_level_shap(india: pd.DataFrame) -> None:
    frame = _outcomes(india, "sim:stem", load_profile("stem").effects, seed=2, complete=True)
    table = S.progressive_shap_table(frame)
    last = table[table["experiment"].eq("progressive") & table["step"].eq(table["step"].max())]
    assert last.sort_values("mean_abs_shap").iloc[-1]["attribute"] == "disability"
    assert last.set_index("attribute").loc["disability", "significant"]
    assert not last[last["attribute"].ne("disability")]["significant"].any()
    step1 = table[table["step"].eq(1)]
    assert step1["reason"].str.startswith("too few profiles").all() and step1["mean_abs_shap"].isna().all()
    rows = frame[frame["experiment"].eq("progressive") & frame["step"].eq(int(last["step"].iloc[0]))]
    stated = last["attribute"].tolist()
    direct = linear_shap(rows, stated, "y").by_attribute().abs().mean()
    weights = rows.groupby("profile_id")["y"].count()
    assert weights.nunique() == 1  # every profile answered every problem: the two means agree exactly
    for attribute in stated:
        assert abs(last.set_index("attribute").loc[attribute, "mean_abs_shap"] - direct[attribute]) < 1e-9


def test_single_attribute_bias_is_the_shared_mab_mdb_and_descriptive(india: pd.DataFrame) -> None:
    frame = _outcomes(india, "sim:stem", load_profile("stem").effects, seed=2)
    table = S.single_bias_table(frame)
    assert "significant" not in table.columns and table["p_wordings"].between(0, 1).all()
    single = frame[frame["experiment"].eq("single")]
    disability = single[single["varied"].isin(["disability", ""])].copy()
    disability.loc[disability["varied"].eq(""), "disability"] = ""
    z = (single["y"] - single["y"].mean()) / single["y"].std()
    by_level = z[single["varied"].eq("disability")].groupby(single["disability"]).mean()
    row = table.set_index("attribute").loc["disability"]
    assert abs(row["mdb_z"] - (by_level.max() - by_level.min())) < 1e-12
    assert abs(row["mab_z"] - (by_level - by_level.mean()).abs().mean()) < 1e-12
    assert by_level["Disabled"] < by_level["Able-bodied"] and row["p_wordings"] <= 0.01  # planted −1.5 on Disabled
    cell = ["model", "task", "context", "dataset", "role"]
    assert np.allclose(mab_mdb(group_scores(disability, cell, {"disability": ("Able-bodied", "Disabled")}),
                               cell)["mdb"], row["mdb"])


def test_the_average_kappa_and_its_null(india: pd.DataFrame) -> None:
    rng = np.random.default_rng(1)
    a, b = rng.integers(1, 6, 300).astype(float), rng.integers(1, 6, (4, 300)).astype(float)
    b[0, :7] = np.nan
    mine = S._linear_kappa(a, b)
    for row, value in zip(b, mine, strict=True):
        assert abs(value - cohen_kappa(a, row, weights="linear", categories=(1, 2, 3, 4, 5)).kappa) < 1e-12
    ranking = build_prompt_table(StemDesign.paper(contexts=("india",), progressive=(), single_attribute=(),
                                                  tasks=("ranking",)))
    planted = pd.concat([A.outcome_frame(simulate_outcomes(ranking, m, seed=i)) for i, m in
                         enumerate(("sim:stem", "sim:stem-2"))], ignore_index=True)
    shared = S.kappa_average_table(planted)  # both models plant Rural and Low-income: real agreement
    assert len(shared) == 1 and shared["n_cells"].iloc[0] == 2 and shared["significant"].iloc[0]
    assert abs(shared["null_mean"].iloc[0]) < 0.03
    per_cell = A.kappa_table(planted)
    assert abs(shared["mean_kappa_linear"].iloc[0] - per_cell["kappa_linear"].mean()) < 1e-12
    null = pd.concat([_outcomes(ranking, f"sim:null{i}", (), seed=i, profile_sd=0.1) for i in range(6)],
                     ignore_index=True)
    table = S.kappa_average_table(null)
    assert len(table) == 15 and table["p_value"].between(0, 1).all()
    assert table["significant"].mean() <= 0.2


def test_the_average_kappa_shuffles_a_profile_once_for_every_cell() -> None:
    """The profile is the independent unit: when both models answer each profile the same in both roles,
    the two cells are one cell counted twice, so the mean over them must have the one cell's null (a shuffle
    per cell would halve the null's variance and mark chance agreement)."""
    ranking = build_prompt_table(StemDesign.paper(contexts=("india",), progressive=(), single_attribute=(),
                                                  tasks=("ranking",)))
    models = pd.concat([_outcomes(ranking, f"sim:null{i}", (), seed=i, profile_sd=0.3) for i in range(2)],
                       ignore_index=True)
    teacher = models[models["role"].astype(str).eq("teacher")]
    twice = pd.concat([teacher, teacher.assign(role="student")], ignore_index=True)
    once, both = S.kappa_average_table(teacher), S.kappa_average_table(twice)
    assert both["n_cells"].iloc[0] == 2 and once["n_cells"].iloc[0] == 1
    assert abs(both["mean_kappa_linear"].iloc[0] - once["mean_kappa_linear"].iloc[0]) < 1e-12
    assert both["p_value"].iloc[0] == once["p_value"].iloc[0]


def _null_models(table: pd.DataFrame, n: int) -> pd.DataFrame:
    return pd.concat([_outcomes(table, f"sim:null{i}", (), seed=11, profile_sd=0.1) for i in range(n)],
                     ignore_index=True)


def test_null_models_are_rarely_marked(india: pd.DataFrame) -> None:
    frame = _null_models(india, 20)
    for table in (G.within_gap_table(frame), G.decile_table(frame), S.progressive_shap_table(frame)):
        assert table["model"].nunique() == 20
        assert table.groupby("model")["significant"].any().mean() <= 0.15


def test_the_report_shows_every_new_section(india: pd.DataFrame) -> None:
    from counterbench.builtin.stem.results import analyze_results
    from counterbench.builtin.stem.study import StemStudy
    from counterbench.report.api import render_report
    from counterbench.report.context import ReportInput, build_context

    preset = replace(load_profile("stem"), effects=(*load_profile("stem").effects, IIT_MEDIUM))
    results = pd.concat([simulate_outcomes(india, "sim:iit", preset=preset, seed=3),
                         simulate_outcomes(india, "sim:stem", seed=4)], ignore_index=True)
    tables, summary = analyze_results(results)
    for name in ("stem_within_gaps", "stem_deciles", "stem_progressive_shap", "stem_single_bias"):
        assert not tables[name].empty, name
    assert tables["stem_kappa_average"].empty and "two --model" in summary["unsupported"]["stem_kappa_average"]
    html, markdown = render_report(ReportInput(tables, {**summary, "study": "stem"}))
    for title in ("Gaps inside a subgroup (e.g. within IIT)", "Who is in the top and bottom tenth",
                  "SHAP on the progressive experiment", "Single-attribute MAB and MDB", "Interaction grids"):
        assert title in html, title
    assert "sim:iit · india · progressive" in html  # the progressive SHAP chart
    assert "grade level per step" in html  # the progressive box chart (Figures 5–10)
    assert "English − Hindi/Regional" in markdown
    keys = [s.key for s in StemStudy().report_sections(build_context(ReportInput(tables, {**summary,
                                                                                          "study": "stem"})))]
    assert keys.index("stem_within_gaps") > keys.index("stem_progressive")
    assert keys.index("stem_deciles") == keys.index("stem_extremes") + 1


def test_the_progressive_chart_draws_each_steps_distribution(india: pd.DataFrame) -> None:
    from counterbench.builtin.stem import analysis_designs as D
    from counterbench.builtin.stem.progressive_chart import progressive_panels, step_labels

    frame = _outcomes(india, "sim:stem", load_profile("stem").effects, seed=2)
    table = D.progressive_table(frame)
    rows = frame[frame["experiment"].eq("progressive") & frame["step"].eq(5) & frame["y"].notna()]
    last = table[table["experiment"].eq("progressive") & table["step"].eq(5)].iloc[0]
    for column, q in D.QUANTILES.items():
        assert abs(last[column] - float(np.quantile(rows["y"], q))) < 1e-12
    assert last["n_profiles"] == 288 and last["n"] == len(rows)
    assert step_labels("india", "progressive")[4] == "+ college tier"
    assert step_labels("india", "ablation")[4] == "+ disability"  # the ablation skips the fixed college tier
    panels = progressive_panels(table)
    assert len(panels) == 2  # progressive and ablation
    svg = str(panels[0])
    assert "step 5" in svg and "+ disability" in svg and svg.count("<rect") >= 5
    assert f"median {last['median']:.2f}" in svg
