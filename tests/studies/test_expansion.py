"""The column-wise expansion (``counterbench.studies.expansion``) against rendering every prompt on its own.

For each example study, and a study whose two use cases have different profile fields (numbers in one,
text in the other, a per-language value, a float of 1e15 or more), every row of the expanded table must
be what rendering that prompt's template with its own values gives, and every column must have the
type the prompt table promises. A constant column holds one object, not one per row (the memory a
2,000,000-prompt table needs; ``benchmarks/expansion_speed.py``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from counterbench.columns import BASE_COLUMNS
from counterbench.studies.declarative import DeclarativeStudy, render
from counterbench.studies.definition import parse_study
from counterbench.studies.registry import load_study

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p for p in (REPO / "examples").glob("*.yaml") if isinstance(load_study(p), DeclarativeStudy))


def _two_use_cases() -> DeclarativeStudy:
    data = yaml.safe_load((REPO / "examples" / "rent_quote.yaml").read_text(encoding="utf-8"))
    rent = data["use_cases"]["rent_quote"]
    rent["template"]["en"] = "I own a {flat} of {area} sq ft in {city}.\n{identifier_phrase}.\n{question}"
    rent["profiles"] = [
        {"profile_id": f"P{i:02d}", "flat": f"{1 + i % 3}BHK flat", "area": [850, 1200.5, 1e16][i % 3],
         "city": ["Pune", {"en": "Bengaluru", "hinglish": "Bangalore"}][i % 2]} for i in range(6)
    ]
    data["use_cases"]["deposit"] = {
        "answer_type": "inr", "system_prompt": "rent",
        "template": {"en": "{question} The flat is in {town}. {identifier_phrase}.",
                     "hinglish": "{question} Flat {town} mein hai. {identifier_phrase}."},
        "question_variants": {"en": ["What deposit should I ask?"], "hinglish": ["Kitna deposit lun?"]},
        "profiles": [{"profile_id": "D1", "town": "Nashik"}, {"profile_id": "D2", "town": "Mysuru"}],
    }
    return DeclarativeStudy(parse_study(data, "two use cases"))


def _rendered(study: DeclarativeStudy, row: pd.Series) -> str:
    d = study.definition
    uc = d.use_cases[row["use_case"]]
    lang = row["language"]
    profile = next(p for p in uc.profiles if p["profile_id"] == row["profile_id"])
    values: dict[str, Any] = {k: (v[lang] if isinstance(v, dict) else v) for k, v in profile.items()}
    values["question"] = uc.question_variants[lang][row["question_variant"] - 1]
    unit = next(u for u in study._units(lang) if (u[0], u[1]) == (row["axis"], row["identifier"]))
    return render(uc.templates[lang], {**unit[2], **values})


@pytest.mark.parametrize("study", [*EXAMPLES, "two use cases"], ids=lambda s: getattr(s, "stem", s))
def test_every_row_is_its_prompt_rendered_on_its_own(study: Path | str) -> None:
    the_study = _two_use_cases() if study == "two use cases" else load_study(study)
    assert isinstance(the_study, DeclarativeStudy)
    variants = ["standard", "fairness"] if the_study.definition.fairness_suffix is not None else ["standard"]
    table = the_study.expand(variants)
    assert list(table.columns[: len(BASE_COLUMNS)]) == list(BASE_COLUMNS)
    assert table["question_variant"].dtype == "int64"
    assert all(table[c].dtype == object for c in BASE_COLUMNS if c != "question_variant")
    assert table["prompt_id"].is_unique
    for _, row in table.iterrows():
        assert row["user"] == _rendered(the_study, row), row["prompt_id"]
        assert row["system"] == the_study.system_prompt_for(row["use_case"], row["variant"])
        assert row["prompt_id"].endswith("_fair") == (row["variant"] == "fairness")
    for column in table.columns[len(BASE_COLUMNS):]:
        values = table[column]
        assert values.dtype in ("float64", object), column
        if values.dtype == object:  # text, or None where a use case has no such field
            assert all(v is None or type(v) is str for v in values), column


def test_design_columns_keep_their_values_and_types() -> None:
    table = _two_use_cases().expand(["standard"])
    rent, deposit = table[table["use_case"] == "rent_quote"], table[table["use_case"] == "deposit"]
    assert table["area"].dtype == "float64" and deposit["area"].isna().all()
    assert sorted(set(rent["area"])) == [850.0, 1200.5, 1e16]
    assert set(deposit["town"]) == {"Nashik", "Mysuru"} and rent["town"].map(lambda v: v is None).all()
    assert "of 10000000000000000 sq ft" in rent.loc[rent["profile_id"] == "P02", "user"].iloc[0]
    hinglish = rent[(rent["language"] == "hinglish") & (rent["profile_id"] == "P01")]
    assert set(hinglish["city"]) == {"Bangalore"}
    assert rent["level_index"].map(lambda v: not math.isnan(v)).all()


def test_constant_columns_share_one_object_and_the_cache_stays_intact() -> None:
    study = _two_use_cases()
    table = study.expand(["standard", "fairness"])
    blocks = 2 * 2 * 2  # use cases × languages × variants
    assert len(table) > 30 * blocks
    for column in ("study", "use_case", "language", "variant", "answer_type", "system"):
        assert len({id(v) for v in table[column]}) <= blocks, column  # one object per block at most
    table.loc[0, "user"] = "changed"
    table["system"] = "changed"
    again = study.expand(["standard", "fairness"])
    assert again.loc[0, "user"] != "changed" and (again["system"] != "changed").all()
