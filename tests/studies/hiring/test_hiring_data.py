"""The hiring study's built-in data and the loaders for user files."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from counterbench.builtin.hiring.data import (
    CATEGORIES,
    load_baskets,
    load_jobs,
    load_resumes,
    pair_jobs_resumes,
)
from counterbench.errors import UserError


def test_builtin_jobs_balanced_like_the_paper():
    jobs = load_jobs()
    occupations = {j.occupation for j in jobs}
    assert len(occupations) >= 20
    share = Counter(j.gender_dominance for j in jobs)
    assert share["male"] == share["female"] == len(jobs) // 4
    assert share["neutral"] == len(jobs) // 2
    resumes = load_resumes()
    assert len(pair_jobs_resumes(jobs, resumes)) == len(jobs) == 100
    # no job asks for a language (the markers must stay job-irrelevant)
    for job in jobs:
        for word in ("Mandarin", "Malay", "Tamil", "English", "bilingual", "language"):
            assert word.lower() not in job.text.lower(), (job.job_id, word)


def test_builtin_baskets_are_4x2x5_and_labelled_as_the_projects_own():
    baskets = load_baskets()
    assert baskets.country == "Singapore"
    assert "not the paper" in baskets.label
    assert baskets.ethnicities == ("Chinese", "Malay", "Indian", "Caucasian")
    assert baskets.genders == ("Male", "Female")
    counts = Counter(b.group for b in baskets.baskets)
    assert len(counts) == 8 and set(counts.values()) == {5}
    for b in baskets.baskets:
        assert set(b.markers) == set(CATEGORIES) and all(b.markers.values())


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_user_baskets_for_another_country(tmp_path):
    rows = [{"ethnicity": e, "gender": g, "variation": v, "languages": f"{e} tongue", "activities": "Chess club",
             "volunteering": "Food bank", "hobbies": f"Hobby {v}"}
            for e in ("Northern", "Southern") for g in ("Woman", "Man") for v in (1, 2)]
    baskets = load_baskets(_write_jsonl(tmp_path / "mine.jsonl", rows))
    assert baskets.ethnicities == ("Northern", "Southern") and len(baskets.baskets) == 8
    assert baskets.label == "user-supplied baskets"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"job_id": "x"', "line 1: not valid JSON"),
        ('{"job_id": "x", "occupation": "o", "industry": "i", "gender_dominance": "mixed", "text": "t"}',
         "gender_dominance must be one of"),
        ('{"job_id": "x", "occupation": "o", "industry": "i", "gender_dominance": "male", "text": "t", "salary": 1}',
         "unknown field 'salary'"),
        ('{"job_id": "x", "occupation": "", "industry": "i", "gender_dominance": "male", "text": "t"}',
         "'occupation' must be a non-empty string"),
        ("", "has no entries"),
    ],
)
def test_bad_job_files_give_one_clear_line(tmp_path, content, message):
    path = tmp_path / "jobs.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(UserError, match=message) as err:
        load_jobs(path)
    assert "\n" not in str(err.value)


def test_missing_resume_and_duplicate_basket_are_errors(tmp_path):
    jobs = load_jobs()[:2]
    resumes = load_resumes()[:1]
    with pytest.raises(UserError, match="no neutral resume for job"):
        pair_jobs_resumes(jobs, resumes)
    rows = [{"ethnicity": "A", "gender": "M", "variation": 1, "languages": "x", "activities": "y",
             "volunteering": "z", "hobbies": "w"}] * 2
    with pytest.raises(UserError, match="appears twice"):
        load_baskets(_write_jsonl(tmp_path / "b.jsonl", rows))
    with pytest.raises(UserError, match="cannot read"):
        load_jobs(tmp_path / "absent.jsonl")


def _generator():
    import importlib.util

    from tests.conftest import REPO

    spec = importlib.util.spec_from_file_location("make_hiring_data", REPO / "scripts" / "make_hiring_data.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_builtin_jobs_and_resumes_are_distinct_texts_of_realistic_length():
    import re

    from counterbench.builtin.hiring.overlap import MAX_SHARED, max_pairwise_overlap

    jobs, resumes = load_jobs(), load_resumes()
    # distinct even without the employer line and every number (the old set fell to 20 job texts)
    core = {re.sub(r"\d+", "#", re.sub(r"^Employer:.*$", "", j.text, flags=re.M)) for j in jobs}
    assert len(core) == len(jobs) == 100
    assert len({re.sub(r"\d+", "#", r.text) for r in resumes}) == len(resumes) == 100
    assert all(1500 <= len(r.text) <= 3000 for r in resumes), sorted(len(r.text) for r in resumes)[:3]
    assert max_pairwise_overlap([j.text for j in jobs]) <= MAX_SHARED
    assert max_pairwise_overlap([r.text for r in resumes]) <= MAX_SHARED
    assert {r.weakness.split()[0] == "no" for r in resumes} == {True, False}  # both kinds of weakness


def test_overlap_measure_sees_a_near_copy():
    from counterbench.builtin.hiring.overlap import MAX_SHARED, jaccard, max_pairwise_overlap, shingles

    text = load_resumes()[0].text
    near_copy = text.replace("Professional Summary", "Summary", 1)
    assert max_pairwise_overlap([text, near_copy]) > 0.9 > MAX_SHARED
    assert jaccard(shingles("a b c d e"), shingles("f g h i j")) == 0.0


def test_the_committed_data_is_what_the_generator_writes():
    jobs, resumes = _generator().build()
    assert [(j["job_id"], j["text"]) for j in jobs] == [(j.job_id, j.text) for j in load_jobs()]
    assert [(r["job_id"], r["text"], r["weakness"]) for r in resumes] == [
        (r.job_id, r.text, r.weakness) for r in load_resumes()]
