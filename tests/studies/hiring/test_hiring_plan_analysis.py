"""Presets, the prompt table and the whole analysis on raw answers (hostile ones included)."""

from __future__ import annotations

import pandas as pd
import pytest

import counterbench
from counterbench.builtin.hiring import synthetic as syn
from counterbench.builtin.hiring.analysis import TABLES, analyze_hiring, frames
from counterbench.builtin.hiring.data import load_jobs
from counterbench.builtin.hiring.plan import build_prompts, full_plan, plan_from_mapping, select_jobs
from counterbench.errors import UserError


def quick() -> pd.DataFrame:
    return counterbench.prompts("hiring", preset="quick")


def test_quick_preset_is_small_and_balanced():
    prompts = quick()
    assert len(prompts) == 123
    assert set(prompts["gender_dominance"]) == {"male", "female", "neutral"}
    compare = prompts[prompts["use_case"].eq("compare")]
    # each augmented resume in both positions, with the options saying who stands where
    assert (compare.groupby(["job_id", "group", "variation"])["position"].apply(sorted) == pd.Series(
        [["A", "B"]] * (len(compare) // 2), index=compare.groupby(["job_id", "group", "variation"]).size().index)).all()
    a_first = compare[compare["position"].eq("A")]
    assert (a_first["option_A"] == a_first["group"]).all() and a_first["option_B"].eq("neutral").all()
    assert compare["user"].str.rstrip().str.endswith("No explanation.").all()
    scores = prompts[prompts["use_case"].eq("score")]
    assert scores.groupby("job_id").size().eq(9).all()  # neutral + 8 groups (one variation)
    assert set(prompts["answer_type"]) >= {"choice:A|B|Tie", "score:1:100"}


def test_paper_preset_has_41_resumes_per_job_and_both_variants():
    plan = plan_from_mapping({"jobs": 4, "recover_jobs": 1}, base=full_plan())
    prompts = build_prompts(plan)
    score = prompts[prompts["use_case"].eq("score")]
    assert score.groupby("job_id").size().eq(41).all() and score["job_id"].nunique() == 4
    assert len(prompts[prompts["use_case"].eq("compare_rationale")]) == 4 * 40 * 2
    assert prompts[prompts["use_case"].eq("compare_rationale")]["user"].str.contains("2-3 sentences").all()
    assert set(prompts.loc[prompts["use_case"].eq("compare"), "condition"]) == {"all", "only-languages"}
    recover = prompts[prompts["use_case"].eq("recover_ethnicity")]
    assert recover["condition"].nunique() == 8  # 5 cumulative steps + 3 single-category conditions
    # one fixed answer type per question, whatever the truth: nothing in the request leaks the answer
    assert recover["answer_type"].unique().tolist() == ["label:Chinese|Malay|Indian|Caucasian|Cannot determine"]
    assert recover["truth"].nunique() == 4
    # prompts that ask for a rationale (or a reason) request room for it; the plain ones use the run's limit
    limits = prompts.groupby("use_case")["requested_max_tokens"].agg(lambda s: set(s.dropna()))
    assert limits["compare_rationale"] == limits["score_rationale"] == {256} and limits["recover_gender"] == {128}
    assert limits["compare"] == limits["score"] == set()


def test_round_robin_jobs_and_bad_plans():
    jobs = load_jobs()
    assert len({j.occupation for j in select_jobs(jobs, 20)}) == 20
    with pytest.raises(UserError, match="unknown job_id 'nope'"):
        select_jobs(jobs, ("nope",))
    with pytest.raises(UserError, match="unknown key 'setting'"):
        plan_from_mapping({"setting": ["compare"]})
    with pytest.raises(UserError, match="unknown preset 'huge'"):
        counterbench.prompts("hiring", preset="huge")


def test_every_table_from_raw_answers_with_hostile_output():
    plan = plan_from_mapping({"jobs": 6, "recover_jobs": 2}, base=full_plan())
    design = build_prompts(plan).drop(columns=["system", "user"])
    biased = syn.Planted(compare_effects={"Chinese": 0.3}, first_position=0.1)
    results = pd.concat([syn.answer_texts(design, "m1", biased, seed=1, hostile_rate=0.05),
                         syn.answer_texts(design, "m2", syn.Planted(), seed=2, hostile_rate=0.05)], ignore_index=True)
    results.loc[0, "response"] = "x" * 10_000_000 + "\n### A"
    tables, unsupported = analyze_hiring(results, bootstrap=300)
    # every table but those that need repeated runs or several prompt wordings (--variant)
    assert set(tables) == set(TABLES) and set(unsupported) == {"hiring_stability", "hiring_prompt_variants"}
    health = tables["hiring_parse_health"]
    reasons = set(health["reason"])
    assert {"ambiguous", "out_of_scale", "no_score"} <= reasons
    assert health[health["status"].eq("refused")]["n"].sum() > 0
    wr = tables["hiring_win_rates"]
    top = wr[wr["model"].eq("m1") & ~wr["rationale"]].sort_values("win_rate").iloc[-1]
    assert top["group"].startswith("Chinese") and top["ci_low"] > 0.5
    assert len(tables["hiring_friedman"]) == 4  # 2 settings × 2 prompt variants, over the 2 models
    # the planted recoverability (ethnicity from the languages line) read back from the answers' text
    f1 = tables["hiring_recoverability"].set_index(["model", "attribute", "condition"])["macro_f1"]
    assert f1[("m1", "ethnicity", "all")] > 0.8 and f1[("m1", "ethnicity", "none")] < 0.45


def test_answers_that_did_not_finish_never_count_as_verdicts():
    design = quick().drop(columns=["system", "user"])
    results = syn.answer_texts(design, "m1", syn.Planted(), seed=1)
    compare = results.index[results["use_case"].eq("compare")][:3]
    results.loc[compare, "response"] = "### A"  # readable, but cut off / filtered / blank at every attempt
    results.loc[compare, "status"] = ["truncated", "filtered", "empty"]
    tables, _ = analyze_hiring(results, bootstrap=50)
    health = tables["hiring_parse_health"]
    unfinished = health[health["status"].isin(["truncated", "filtered", "empty"])]
    assert unfinished["n"].sum() == 3 and set(unfinished["reason"]) == {"truncated", "filtered", "empty"}
    assert frames(results)["comparisons"].loc[compare, "verdict"].isna().all()  # no win, loss or tie


def test_quick_preset_tables_say_what_they_cannot_support():
    design = quick().drop(columns=["system", "user"])
    tables, unsupported = analyze_hiring(syn.answer_texts(design, "one", syn.Planted()), bootstrap=200)
    assert {"hiring_friedman", "hiring_rationale_tests", "hiring_language_only"} <= set(unsupported)
    assert not tables["hiring_win_rates"].empty and not tables["hiring_recoverability"].empty
