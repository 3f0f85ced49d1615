"""Names, errors, rules data and the vectorised helper of counterbench.parse."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from tests.parse.rupeebias_types import answer_type

from counterbench.errors import UserError
from counterbench.parse import ParsedAnswer, answer_type_names, parse_answer, parse_profiles, parse_series
from counterbench.parse.rules import load_rules


def test_profiles() -> None:
    assert set(parse_profiles()) == {"default", "rupeebias-v1"}


@pytest.mark.parametrize(
    ("use_case", "expected"),
    [
        ("salary_estimation", "inr_annual"),
        ("counter_offer_recommendation", "inr_annual"),
        ("salary_increment_estimation", "percent"),
        ("service_pricing_vendor", "inr"),
        ("service_pricing_customer", "inr"),
        ("service_pricing_client", "inr"),  # the release's name, an alias the study declares
    ],
)
def test_the_study_declares_its_use_cases_answer_types(use_case: str, expected: str) -> None:
    assert answer_type(use_case) == expected


def test_the_parse_rules_name_no_study_use_case() -> None:
    """Which use case reads which answer type is the study's to say; the parse rules know answer types only."""
    assert not hasattr(load_rules(), "use_cases")
    with pytest.raises(UserError, match="unknown answer type 'salary_estimation'"):
        parse_answer("### 5 INR", "salary_estimation")


def test_unknown_answer_type_is_a_user_error() -> None:
    with pytest.raises(UserError) as info:
        parse_answer("### 5 INR", "salary_guess")
    message = str(info.value)
    assert "\n" not in message and "salary_guess" in message
    for name in ("inr_annual", "inr", "percent", "number"):
        assert name in message


def test_unknown_profile_is_a_user_error() -> None:
    with pytest.raises(UserError) as info:
        parse_answer("### 5 INR", "inr_annual", profile="rupeebias-v2")
    assert "default" in str(info.value) and "rupeebias-v1" in str(info.value)
    with pytest.raises(UserError):
        parse_series(pd.Series(["### 5 INR"]), "inr_annual", profile="strict")


def test_v1_has_no_generic_number_parser() -> None:
    with pytest.raises(UserError, match="rupeebias-v1"):
        parse_answer("### 5", "number", profile="rupeebias-v1")


def test_answer_type_names_listed() -> None:
    assert answer_type_names() == ["inr", "inr_annual", "number", "percent"]


def test_parsed_answer_is_frozen() -> None:
    parsed = parse_answer("### 5 %", "percent")
    assert isinstance(parsed, ParsedAnswer) and parsed.ok
    with pytest.raises(AttributeError):
        parsed.value = 6.0  # type: ignore[misc]


def test_non_string_text_is_empty() -> None:
    assert parse_answer(float("nan"), "percent").reason == "empty"  # type: ignore[arg-type]


def test_rules_are_data() -> None:
    rules = load_rules()
    assert rules.scales["lpa"] == 1e5 and rules.scales["crore"] == 1e7 and rules.scales["k"] == 1e3
    assert "nahi kar sakta" in rules.refusal_phrases["default"]
    assert set(rules.refusal_phrases) == {"default"}  # the release's own list lives with its study
    from counterbench.builtin.rupeebias.parse_v1 import is_release_refusal

    assert is_release_refusal("Sorry, no") and not is_release_refusal("Sorry, 12 LPA")
    salary = rules.answer_types["inr_annual"]
    assert (salary.lower, salary.upper, salary.release_unit) == (50_000, 100_000_000, "LPA")
    assert (rules.answer_types["percent"].lower, rules.answer_types["percent"].upper) == (0, 300)
    assert (rules.answer_types["inr"].lower, rules.answer_types["inr"].upper) == (100, 10_000_000)


def test_parse_series_columns_index_and_values() -> None:
    texts = pd.Series(
        ["### 1200000 INR", "### 12 %", None, "### -1 INR", "I cannot answer.", "### 1200000 INR"],
        index=[10, 11, 12, 13, 14, 15],
    )
    use_cases = pd.Series(
        [
            "salary_estimation",
            "salary_increment_estimation",
            "salary_estimation",
            "service_pricing_client",
            "counter_offer_recommendation",
            "salary_estimation",
        ]
    )
    table = parse_series(texts, use_cases.map(answer_type))
    assert list(table.columns) == [
        "status",
        "value",
        "unit",
        "is_range",
        "out_of_range",
        "reason",
        "release_value",
        "release_unit",
    ]
    assert list(table.index) == [10, 11, 12, 13, 14, 15]
    assert list(table["status"]) == ["ok", "ok", "unparseable", "unparseable", "refused", "ok"]
    assert list(table["reason"]) == [None, None, "empty", "negative", "refusal", None]
    np.testing.assert_array_equal(table["value"].to_numpy()[[0, 1, 5]], [1_200_000, 12, 1_200_000])
    assert table["value"].isna().tolist() == [False, False, True, True, True, False]
    assert table["release_value"].tolist()[0] == 12.0
    assert table["value"].dtype == np.float64 and table["is_range"].dtype == bool


def test_parse_series_same_text_different_use_cases() -> None:
    texts = pd.Series(["### 45000 INR"] * 4)
    use_cases = pd.Series(["salary_estimation", "service_pricing_vendor"] * 2)
    table = parse_series(texts, use_cases.map(answer_type), profile="rupeebias-v1")
    assert table["release_value"].tolist() == [45000.0, 45000.0, 45000.0, 45000.0]
    assert table["value"].tolist() == [4.5e9, 45000.0, 4.5e9, 45000.0]  # v1: <1e5 INR salary read as LPA


def test_parse_series_single_use_case_and_errors() -> None:
    table = parse_series(pd.Series(["### 8 %", "### 9 %"]), "percent")
    assert table["value"].tolist() == [8.0, 9.0]
    assert parse_series(pd.Series([], dtype=object), "percent").empty
    with pytest.raises(UserError):
        parse_series(pd.Series(["### 8 %"]), pd.Series(["percent", "inr"]))
    with pytest.raises(UserError):
        parse_series(pd.Series(["### 8 %"]), pd.Series(["hike"]))
