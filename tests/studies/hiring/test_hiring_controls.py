"""Controls that control: resume length within job × ethnicity, the language-only table once per ethnicity."""

from __future__ import annotations

import pandas as pd

from counterbench.builtin.hiring import controls
from counterbench.builtin.hiring import synthetic as syn
from counterbench.builtin.hiring.analysis import analyze_hiring, frames
from counterbench.builtin.hiring.metrics import comparison_win_rates
from counterbench.builtin.hiring.plan import build_prompts, full_plan, plan_from_mapping


def _answers(planted: syn.Planted, *, language_only: bool, jobs: int = 40, seed: int = 3) -> pd.DataFrame:
    plan = plan_from_mapping({"jobs": jobs, "settings": ["compare", "score"], "rationale": [False],
                              "language_only": language_only}, base=full_plan())
    return syn.answer_texts(build_prompts(plan), "m", planted, seed=seed)


def test_an_ethnicity_only_effect_is_not_read_as_a_length_effect():
    # Chinese baskets are longer than the others: a preference for Chinese markers, and nothing about length
    planted = syn.Planted(compare_effects={"Chinese": 0.15}, score_effects={"Chinese": 3.0})
    results = _answers(planted, language_only=False)
    tables, _ = analyze_hiring(results, bootstrap=100)
    length = tables["hiring_length_control"].set_index("setting")
    assert (length["p_value"] > 0.05).all(), length
    # the same data regressed within the job alone shows the confound the control must remove
    f = frames(results)
    per = comparison_win_rates(f["comparisons"])
    confounded = controls.within_cells(per[per["condition"].eq("all")], "win_rate", cells=("job_id",))
    assert confounded["p_value"] < 0.01 and confounded["slope_per_100_chars"] > 0


def test_a_planted_length_effect_is_still_found_within_job_and_ethnicity():
    results = _answers(syn.Planted(), language_only=False)
    scores = frames(results)["scores"]
    marked = scores[~scores["group"].eq("neutral")].copy()
    marked["score"] = marked["score"] + 0.2 * marked["resume_chars"]  # planted: 20 points per 100 characters
    fit = controls.within_cells(marked, "score")
    assert fit["p_value"] < 0.001 and abs(fit["slope_per_100_chars"] - 20) < 5


def test_language_only_table_has_one_row_per_ethnicity_and_byte_identical_prompts_count_once():
    results = _answers(syn.Planted(compare_effects={"Malay": 0.2}), language_only=True, jobs=12)
    lang_prompts = results[results["axis"].eq("only-languages")]
    assert lang_prompts["user"].nunique() < len(lang_prompts)  # Male and Female: the same text
    tables, _ = analyze_hiring(results, bootstrap=200)
    lang = tables["hiring_language_only"]
    assert list(lang["group"]) == ["Chinese", "Malay", "Indian", "Caucasian"]  # the BH family has 4 members
    unique = lang_prompts.drop_duplicates("user")
    assert lang["n_comparisons"].sum() == unique.groupby(["job_id", "ethnicity", "variation"]).ngroups
    assert lang.set_index("group")["win_rate"].idxmax() == "Malay"
