"""A design that cannot vary the prompt is refused with one line naming the key, before any prompt exists."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from counterbench.errors import UserError
from counterbench.prompts import build_prompts
from tests.conftest import REPO

RENT = REPO / "examples" / "rent_quote.yaml"
CROSSED = REPO / "examples" / "approval_crossed.yaml"


def _variant(tmp_path: Path, source: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    data = yaml.safe_load(source.read_text())
    edit(data)
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False))
    return path


def _attribute_named_like_a_profile_field(d: dict[str, Any]) -> None:
    d["design"]["crossed"]["attributes"]["scenario"] = ["a", "b"]


def _profile_field_named_like_a_placeholder(d: dict[str, Any]) -> None:
    for profile in d["use_cases"]["rent_quote"]["profiles"]:
        profile["identifier_phrase"] = "Someone"


def _profile_field_named_like_a_column(d: dict[str, Any]) -> None:
    for profile in d["use_cases"]["rent_quote"]["profiles"]:
        profile["identifier"] = "x"


def _attribute_absent_from_the_template(d: dict[str, Any]) -> None:
    d["use_cases"]["approval"]["template"]["en"] = "The applicant is a {age} {race} person. {scenario}\n{question}"


def _two_identifiers_with_one_phrase(d: dict[str, Any]) -> None:
    religion = d["axes"]["Religion"]
    religion[1]["phrases"]["hinglish"] = religion[0]["phrases"]["hinglish"]


def _two_levels_with_one_phrase(d: dict[str, Any]) -> None:
    d["design"]["crossed"]["attributes"]["gender"] = [
        {"value": "female", "phrases": {"en": "woman"}}, {"value": "male", "phrases": {"en": "woman"}}]


def _choice_without_options(d: dict[str, Any]) -> None:
    d["use_cases"]["approval"]["outcome"] = {"kind": "choice", "options": ["A", "B"]}


REFUSED = [
    (CROSSED, _attribute_named_like_a_profile_field, "profiles[0].scenario: 'scenario' is also a crossed attribute"),
    (RENT, _profile_field_named_like_a_placeholder, "profiles[0].identifier_phrase"),
    (RENT, _profile_field_named_like_a_column, "profiles[0].identifier: 'identifier' is a column"),
    (CROSSED, _attribute_absent_from_the_template, "missing placeholder {gender}"),
    (RENT, _two_identifiers_with_one_phrase, "template.hinglish: Hindu and Muslim (Religion) give identical prompts"),
    (CROSSED, _two_levels_with_one_phrase, "give identical prompts"),
    (CROSSED, _choice_without_options, "use_cases.approval.profiles: a choice outcome needs a profile field option_A"),
]


@pytest.mark.parametrize(("source", "edit", "message"), REFUSED, ids=[r[1].__name__ for r in REFUSED])
def test_a_design_that_cannot_vary_the_prompt_is_one_line_exit_2(
        tmp_path: Path, cli_here: Any, source: Path, edit: Callable[[dict[str, Any]], None], message: str) -> None:
    path = _variant(tmp_path, source, edit)
    with pytest.raises(UserError, match=r"study\.yaml: ") as info:
        build_prompts(path)
    assert message in str(info.value)
    result = cli_here("prompts", str(path), "--out", str(tmp_path / "out.csv"))
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and message in lines[0], result.stderr
    assert list(tmp_path.iterdir()) == [path]


def test_a_choice_use_case_with_its_option_columns_expands(tmp_path: Path) -> None:
    def edit(d: dict[str, Any]) -> None:
        d["use_cases"]["approval"]["outcome"] = {"kind": "choice", "options": ["A", "B"]}
        for profile in d["use_cases"]["approval"]["profiles"]:
            profile.update(option_A="approve", option_B="decline")

    table = build_prompts(_variant(tmp_path, CROSSED, edit))
    assert set(table["option_A"]) == {"approve"} and table["user"].is_unique
