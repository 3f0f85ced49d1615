"""Round-trip properties of the parser over many seeded random values (no hypothesis needed)."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from tests.parse.rupeebias_types import answer_type

from counterbench.parse import parse_answer

N = 400


def western(n: int) -> str:
    return f"{n:,}"


def indian(n: int) -> str:
    """Indian digit grouping: the last three digits, then groups of two (12,34,56,789)."""
    digits = str(n)
    if len(digits) <= 3:
        return digits
    head, tail = digits[:-3], digits[-3:]
    groups = []
    while len(head) > 2:
        groups.insert(0, head[-2:])
        head = head[:-2]
    groups.insert(0, head)
    return ",".join(groups) + "," + tail


def test_indian_grouping_helper() -> None:
    assert indian(1) == "1"
    assert indian(1000) == "1,000"
    assert indian(100000) == "1,00,000"
    assert indian(12345678) == "1,23,45,678"


def _integers(seed: int) -> list[int]:
    rng = random.Random(seed)
    return [int(10 ** rng.uniform(0, 9)) for _ in range(N)] + [1, 10, 100, 999, 1000, 99999, 100000]


@pytest.mark.parametrize("profile", ["default", "rupeebias-v1"])
@pytest.mark.parametrize("style", [str, western, indian])
def test_price_round_trip(profile: str, style: Callable[[int], str]) -> None:
    """`### n INR` parses back to n for prices, however n is grouped, under both profiles."""
    for n in _integers(1):
        text = f"### {style(n)} INR"
        parsed = parse_answer(text, answer_type("service_pricing_vendor"), profile)
        assert (parsed.status, parsed.value, parsed.release_value) == ("ok", n, n), text
        assert parsed.out_of_range == (not 100 <= n <= 10_000_000), text


@pytest.mark.parametrize("style", [str, western, indian])
def test_salary_round_trip_default(style: Callable[[int], str]) -> None:
    """Salary `### n INR` is n rupees per year (never LPA), release value n / 1e5."""
    for n in _integers(2):
        text = f"### {style(n)} INR"
        parsed = parse_answer(text, answer_type("salary_estimation"))
        assert (parsed.status, parsed.value) == ("ok", n), text
        assert parsed.release_value == pytest.approx(n / 1e5, rel=1e-12), text


def test_salary_round_trip_v1_quirk() -> None:
    """Under rupeebias-v1 a salary `### n INR` is n rupees only from ₹1 lakh; below, n is read as LPA."""
    for n in _integers(3):
        parsed = parse_answer(f"### {indian(n)} INR", answer_type("salary_estimation"), "rupeebias-v1")
        expected = n if n >= 100_000 else n * 100_000
        assert parsed.value == pytest.approx(expected, rel=1e-12), n


@pytest.mark.parametrize("profile", ["default", "rupeebias-v1"])
def test_lpa_ranges_are_midpoints(profile: str) -> None:
    rng = random.Random(4)
    for _ in range(N):
        lo = round(rng.uniform(1, 60), 1)
        hi = round(lo + rng.uniform(0.5, 30), 1)
        parsed = parse_answer(f"{lo}-{hi} LPA", answer_type("counter_offer_recommendation"), profile)
        assert parsed.status == "ok" and parsed.is_range, (lo, hi)
        assert parsed.value == pytest.approx((lo + hi) / 2 * 1e5, rel=1e-9), (lo, hi)


@pytest.mark.parametrize("profile", ["default", "rupeebias-v1"])
def test_percent_round_trip(profile: str) -> None:
    rng = random.Random(5)
    for _ in range(N):
        p = round(rng.uniform(0, 300), rng.choice([0, 1, 2]))
        for text in (f"### {p} %", f"### {p}%"):
            parsed = parse_answer(text, answer_type("salary_increment_estimation"), profile)
            assert (parsed.status, parsed.value) == ("ok", p), text


def test_default_never_raises_and_values_are_sane() -> None:
    """Random junk made of the pieces real answers are made of: no exception, no negative value."""
    pieces = [
        "###",
        " ",
        "₹",
        "Rs.",
        "INR",
        "LPA",
        "lakh",
        "crore",
        "k",
        "%",
        "-",
        "–",
        "to",
        "12",
        "1,200",
        "12,00,000",
        "1200000",
        "0.5",
        "-1",
        "9.1",
        "\n",
        "I cannot",
        "nahi kar sakta",
        "$",
        ",",
        "per month",
        "**",
        "१२",
        "(",
        ":",
        "between",
        "and",
        "[TRUNCATED]",
        "ERROR:",
    ]
    rng = random.Random(6)
    for _ in range(3000):
        text = "".join(rng.choice(pieces) + rng.choice(["", " "]) for _ in range(rng.randint(1, 9)))
        for use_case in ("inr_annual", "percent", "inr", "number"):
            parsed = parse_answer(text, use_case)
            assert parsed.status in {"ok", "refused", "unparseable"}
            assert (parsed.value is not None) == (parsed.status == "ok"), text
            assert parsed.value is None or parsed.value >= 0, text
            assert parsed.status == "ok" or parsed.reason is not None, text
