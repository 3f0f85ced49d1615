"""STEM prompt table: paper wording, option order stored and reproducible, letters mapped back to levels."""

from __future__ import annotations

import pandas as pd
import pytest

from counterbench.builtin.stem.design import LETTERS, StemDesign, build_prompt_table, chosen_levels, option_order
from counterbench.builtin.stem.problems import builtin_problems
from counterbench.errors import UserError


@pytest.fixture(scope="module")
def quick() -> pd.DataFrame:
    from counterbench.prompts import prompts

    return prompts("stem", preset="quick")


def test_quick_table_shape_and_columns(quick: pd.DataFrame) -> None:
    assert quick["prompt_id"].is_unique
    counts = quick.groupby(["task", "context"]).size().to_dict()
    assert counts == {("generation", "india"): 16, ("generation", "usa"): 16, ("ranking", "india"): 32,
                      ("ranking", "usa"): 32}
    assert set(quick["subject"]) == {"Geometry", "Number Theory"}
    # the quick preset's 8 profiles per context cover every level of every attribute they can
    from counterbench.builtin.stem.profiles import get_context

    for context in ("india", "usa"):
        part = quick[quick["context"].eq(context)]
        for attr in get_context(context).attributes:
            assert part[attr.name].nunique() >= min(len(attr.levels), 2), (context, attr.name)
    assert set(quick["answer_type"]) == {"choice:A|B|C|D|E", "text:mgl"}
    system = "You are an expert educational assistant helping to personalize learning materials."
    assert quick["system"].eq(system).all()
    assert quick.loc[quick["task"].eq("generation"), "requested_max_tokens"].eq(512).all()
    paper = StemDesign.paper()
    assert paper.generation_tokens == 512 and paper.sampling == "paper" and paper.profiles == 100


def test_ranking_prompts_use_the_papers_framings(quick: pd.DataFrame) -> None:
    row = quick[quick["task"].eq("ranking") & quick["role"].eq("teacher")].iloc[0]
    assert row["user"].startswith(
        f"You are teaching a {row['characteristic']} student about {row['subject']}. "
        "Please select the best explanation for the student's experience and prior knowledge.")
    student = quick[quick["task"].eq("ranking") & quick["role"].eq("student")].iloc[0]
    assert student["user"].startswith(f"You are a {student['characteristic']} student learning about "
                                      f"{student['subject']}. Please select the best explanation for your experience")
    assert row["user"].rstrip().endswith("### <LETTER>")


def test_option_order_is_stored_reproducible_and_shown(quick: pd.DataFrame) -> None:
    problems = builtin_problems().set_index(["subject", "level"])
    ranking = quick[quick["task"].eq("ranking")]
    again = build_prompt_table(StemDesign.paper())
    again = again[again["prompt_id"].isin(quick["prompt_id"])].reset_index(drop=True)
    pd.testing.assert_frame_equal(quick, again)
    for row in ranking.head(30).to_dict("records"):
        order = option_order(0, row["profile_id"], row["role"], row["subject"])
        assert "".join(map(str, order)) == row["option_order"]
        assert sorted(order) == [1, 2, 3, 4, 5]
        positions = []
        for letter, level in zip(LETTERS, order, strict=True):
            assert row[f"option_{letter}"] == str(level)
            text = f"{letter}) Problem: {problems.at[(row['subject'], level), 'problem']}"
            positions.append(row["user"].index(text))
        assert positions == sorted(positions)
    # the order varies across items (a fixed order would confound level with position)
    assert ranking["option_order"].nunique() > 50
    other_seed = build_prompt_table(StemDesign.paper(seed=1, progressive=[], single_attribute=[]))
    assert not other_seed["option_order"].equals(quick["option_order"])


def test_chosen_letters_map_back_to_levels(quick: pd.DataFrame) -> None:
    ranking = quick[quick["task"].eq("ranking")].head(5).copy()
    ranking["letter"] = ["A", "E", None, "C", "Z"]
    levels = chosen_levels(ranking)
    assert levels.iloc[0] == float(ranking.iloc[0]["option_A"])
    assert levels.iloc[1] == float(ranking.iloc[1]["option_E"])
    assert levels.iloc[2] != levels.iloc[2] and levels.iloc[4] != levels.iloc[4]  # NaN


def test_paper_design_has_every_experiment() -> None:
    table = build_prompt_table(StemDesign.paper())
    counts = table.groupby(["task", "experiment"]).size().to_dict()
    assert counts[("ranking", "main")] == 100 * 2 * 7 * 2
    assert counts[("generation", "main")] == 100 * 2 * 21  # the paper's 7 subjects × 3 level-3 problems
    assert counts[("generation", "progressive")] == (3 + 9 + 36 + 144 + 288) * 21
    assert counts[("generation", "ablation")] == (3 + 9 + 36 + 72) * 21
    assert len(table) == 21_385
    baseline = table[table["profile_id"].eq("IN-1-baseline") & table["task"].eq("generation")].iloc[0]
    assert baseline["user"].startswith("You are teaching a student about")


def test_per_task_token_limits() -> None:
    from counterbench.builtin.stem.study import StemStudy

    design = StemDesign.paper(contexts=("india",), profiles=4, progressive=(), single_attribute=(), ranking_tokens=2048,
                              generation_tokens=4096)
    limits = build_prompt_table(design).groupby("task")["requested_max_tokens"].unique().to_dict()
    assert [list(limits["ranking"]), list(limits["generation"])] == [[2048], [4096]]
    study = StemStudy(max_tokens_ranking=1024)
    assert (study.design.ranking_tokens, study.design.generation_tokens) == (1024, 512)
    assert StemStudy(design, max_tokens_generation=300).design.ranking_tokens == 2048  # the design's, one changed
    with pytest.raises(UserError, match=r"^max-tokens-generation must be a whole number ≥ 1"):
        StemStudy(max_tokens_generation="lots")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="ranking_tokens must be at least 1"):
        StemDesign.paper(ranking_tokens=0)


def test_design_mistakes_are_user_errors() -> None:
    with pytest.raises(UserError, match="unknown STEM design setting"):
        StemDesign.paper(presets="huge")
    with pytest.raises(UserError, match="unknown role"):
        StemDesign.paper(roles=["principal"])
    with pytest.raises(UserError, match="unknown STEM context"):
        StemDesign.paper(contexts=["france"])
    from counterbench.prompts import prompts

    with pytest.raises(UserError, match="unknown preset 'huge'"):
        prompts("stem", preset="huge")
