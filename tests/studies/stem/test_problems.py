"""STEM problems: the built-in set, a user's MATH copy (per-file JSON or JSONL), JEEBench."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from counterbench.builtin.stem.problems import (
    MATH_SUBJECTS,
    builtin_generation_problems,
    builtin_problems,
    generation_set,
    load_jeebench,
    load_math,
    ranking_set,
)
from counterbench.errors import UserError
from tests.conftest import SHARED_REFERENCE

JEEBENCH_SAMPLE = SHARED_REFERENCE / "other_audits" / "data" / "jeebench_sample42.jsonl"


def test_builtin_set_is_seven_subjects_by_five_levels_with_worked_solutions() -> None:
    problems = builtin_problems()
    assert len(problems) == 35 and set(problems["subject"]) == set(MATH_SUBJECTS)
    assert all(sorted(levels) == [1, 2, 3, 4, 5] for _, levels in problems.groupby("subject")["level"])
    assert problems["solution"].str.len().min() > 40 and problems["problem_id"].is_unique
    assert len(ranking_set(problems)) == 35
    gen = generation_set(problems, per_subject=1)
    assert len(gen) == 7 and gen["level"].eq(3).all()


def test_builtin_generation_set_is_three_level_3_problems_per_subject() -> None:
    gen = builtin_generation_problems()
    assert len(gen) == 21 and gen["level"].eq(3).all() and gen["problem_id"].is_unique
    assert gen.groupby("subject").size().eq(3).all() and gen["problem"].is_unique
    assert gen["solution"].str.len().min() > 40
    # the first round is the ranking task's level-3 problem of each subject, in subject order
    first = builtin_generation_problems(per_subject=1)
    ranking3 = builtin_problems().query("level == 3")
    assert first["problem_id"].tolist() == ranking3["problem_id"].tolist() == gen["problem_id"].head(7).tolist()
    assert not set(gen["problem"]) & set(builtin_problems().query("level != 3")["problem"])


def _write_math_tree(root: Path) -> None:
    for subdir, subject in (("algebra", "Algebra"), ("geometry", "Geometry")):
        folder = root / "MATH" / "test" / subdir
        folder.mkdir(parents=True)
        for i, level in enumerate(["Level 1", "Level 2", "Level 3", "Level 3", "Level 4", "Level 5", "Level ?"]):
            item = {"problem": f"{subject} problem {i}", "level": level, "type": subject, "solution": f"sol {i}"}
            (folder / f"{100 + i}.json").write_text(json.dumps(item), encoding="utf-8")


def test_math_per_file_layout(tmp_path: Path) -> None:
    _write_math_tree(tmp_path)
    math = load_math(tmp_path / "MATH")
    assert len(math) == 12  # "Level ?" problems are skipped
    assert set(math["subject"]) == {"Algebra", "Geometry"}
    assert "math/test/algebra/100" in set(math["problem_id"])
    assert len(ranking_set(math)) == 10
    gen = generation_set(math, per_subject=3)
    assert len(gen) == 4 and gen["level"].eq(3).all()  # only two level-3 problems per subject exist


def test_math_jsonl_layout(tmp_path: Path) -> None:
    rows = [{"problem": "p1", "solution": "s", "subject": "Precalculus", "level": 3,
             "unique_id": "test/precalculus/807.json"},
            {"problem": "p2", "solution": "s", "type": "Number Theory", "level": "Level 5", "id": "x/number_theory/1"}]
    file = tmp_path / "math.jsonl"
    file.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    math = load_math(file)
    assert list(math["problem_id"]) == ["math/test/precalculus/807", "math/x/number_theory/1"]
    assert list(math["level"]) == [3, 5]


def test_math_and_jeebench_mistakes_are_user_errors(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="does not exist"):
        load_math(tmp_path / "nowhere")
    with pytest.raises(UserError, match="does not exist"):
        load_jeebench(tmp_path / "dataset.json")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"problem": "x"\n', encoding="utf-8")
    with pytest.raises(UserError, match="line 1: not valid JSON"):
        load_math(bad)
    notjee = tmp_path / "dataset.json"
    notjee.write_text(json.dumps([{"text": "no question"}]), encoding="utf-8")
    with pytest.raises(UserError, match="not a JEEBench problem"):
        load_jeebench(notjee)


@pytest.mark.skipif(not JEEBENCH_SAMPLE.is_file(), reason="shared reference data not present")
def test_jeebench_sample_and_dataset_json(tmp_path: Path) -> None:
    jee = load_jeebench(JEEBENCH_SAMPLE)
    assert len(jee) == 42 and jee["subject"].value_counts().to_dict() == {"Mathematics": 14, "Physics": 14,
                                                                          "Chemistry": 14}
    items = [json.loads(line) for line in JEEBENCH_SAMPLE.read_text(encoding="utf-8").splitlines()]
    as_array = tmp_path / "dataset.json"
    as_array.write_text(json.dumps([{k: v for k, v in it.items() if k != "id"} for it in items]), encoding="utf-8")
    again = load_jeebench(as_array)
    assert list(again["problem"]) == list(jee["problem"])
    picked = generation_set(jee, n=30, seed=1)
    assert len(picked) == 30 and picked["subject"].value_counts().eq(10).all()
    assert picked.equals(generation_set(jee, n=30, seed=1))
