"""Number forms the adversarial test found read wrongly: each is read right or refused, never misread."""

from __future__ import annotations

import random

import pytest
from tests.parse.rupeebias_types import answer_type
from tests.parse.test_parse_properties import indian, western

from counterbench.parse import parse_answer


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("### 12 00 000 INR", 1_200_000.0),  # Indian grouping with spaces (was 0.0)
        ("### 1 20 00 000 INR", 12_000_000.0),
        ("### 1 200 000 INR", 1_200_000.0),  # Western grouping with spaces
        ("### 1.2M INR", 1_200_000.0),  # was 1.2
        ("### 1.2m INR", 1_200_000.0),
        ("### 1.5 M INR", 1_500_000.0),
        ("### 450K INR", 450_000.0),
        ("### 450k INR", 450_000.0),
        ("### 1e6 INR", 1_000_000.0),  # was 1.0
        ("### 1.2E+06 INR", 1_200_000.0),
        ("### 1.25e6 INR", 1_250_000.0),
        ("### 12 LPA (after your 3rd year)", 1_200_000.0),  # an ordinal is not a number
        ("### 5 000 INR per month", 60_000.0),
        ("Plan for 12 months; ### 9,00,000 INR", 900_000.0),  # "12 months" is not 12M
    ],
)
def test_number_forms_are_read_correctly(text: str, value: float) -> None:
    answer = parse_answer(text, answer_type("salary_estimation"))
    assert answer.status == "ok" and answer.value == pytest.approx(value), (text, answer)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("### 12 00 00 INR", "bad_grouping"),  # neither grouping: refused, not 0
        ("### 12 000 00 INR", "bad_grouping"),
        ("### 1.2B INR", "unreadable_number"),  # an unknown glued unit: refused, not 1.2
        ("### 12x INR", "unreadable_number"),
        ("### 3e INR", "unreadable_number"),
    ],
)
def test_unreadable_number_forms_are_refused(text: str, reason: str) -> None:
    answer = parse_answer(text, answer_type("salary_estimation"))
    assert answer.status == "unparseable" and answer.reason == reason, (text, answer)


def _spaced(grouped: str) -> str:
    return grouped.replace(",", " ")


def test_every_spaced_grouping_and_scientific_form_round_trips_or_is_refused() -> None:
    rng = random.Random(10)
    for _ in range(400):
        n = rng.randint(1_000, 99_999_999)
        forms = [_spaced(indian(n)), _spaced(western(n)), f"{n:.6e}", f"{n / 1e6:.6g}M"]
        for form in forms:
            answer = parse_answer(f"### {form} INR", answer_type("salary_estimation"))
            if answer.status == "ok":
                assert answer.value == pytest.approx(float(form.replace(" ", "").rstrip("M")) * (
                    1e6 if form.endswith("M") else 1.0), rel=1e-9), (form, answer)
            else:
                assert answer.status == "unparseable", (form, answer)
        assert parse_answer(f"### {_spaced(indian(n))} INR", answer_type("salary_estimation")).value == n
