"""Every outcome kind: spec validation, answer-type round trip, parser, constraint and simulated answer agree."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from counterbench.errors import UserError
from counterbench.outcomes import (
    constraint_for,
    encode,
    get_kind,
    is_generic,
    kind_names,
    kind_of_answer_type,
    parse_outcome,
    spec_from_answer_type,
)
from counterbench.outcomes.choice import chosen_rows
from counterbench.run.parsing import ResponseParser


def _fail(key: str, problem: str) -> UserError:
    return UserError(f"{key}: {problem}")


SPECS = {
    "rate": {"kind": "rate"},
    "score": {"kind": "score", "min": 1, "max": 10},
    "label": {"kind": "label", "labels": ["yes", "no", "cannot decide"]},
    "choice": {"kind": "choice", "options": ["A", "B", "C"]},
    "text": {"kind": "text", "metrics": ["length"]},
    "amount": {"kind": "amount", "answer_type": "inr"},
}


def test_every_kind_is_registered_and_each_is_one_module() -> None:
    assert kind_names() == ["amount", "rate", "score", "label", "choice", "text"]
    for name in kind_names():
        assert get_kind(name).name == name
    with pytest.raises(UserError, match="unknown outcome kind 'likert'"):
        get_kind("likert")


@pytest.mark.parametrize("name", list(SPECS))
def test_answer_type_round_trip(name: str) -> None:
    spec = get_kind(name).spec(SPECS[name], _fail)
    encoded = encode(spec)
    assert kind_of_answer_type(encoded) == name
    back = spec_from_answer_type(encoded)
    assert back.kind == spec.kind and back.labels == spec.labels and back.low == spec.low and back.high == spec.high
    assert is_generic(encoded) == (name != "amount")


@pytest.mark.parametrize("name", ["rate", "score", "label", "choice", "amount"])
def test_simulated_answers_match_the_constraint_and_parse_back(name: str) -> None:
    kind = get_kind(name)
    spec = kind.spec(SPECS[name], _fail)
    constraint = constraint_for(encode(spec))
    assert constraint is not None
    schema = constraint.json_schema()
    assert schema["json_schema"]["schema"]["properties"]["answer"]["pattern"] == constraint.regex
    assert constraint.gbnf.startswith("root ::=")
    latents = {"rate": [0.5, 9.25, 33.0], "score": [1.0, 6.4, 10.0], "label": [0.0, 1.0], "choice": [0.0, 1.0],
               "amount": [120000.0]}[name]
    for latent in latents:
        for u in (0.01, 0.5, 0.99):
            text = kind.simulate(spec, latent, u)
            assert re.fullmatch(constraint.regex, text), (text, constraint.regex)
            parsed = parse_outcome(encode(spec), text) if name != "amount" else kind.parse(spec, text, "default")
            assert parsed.status == "ok", (text, parsed)


def test_score_outside_its_scale_is_not_a_value() -> None:
    spec = get_kind("score").spec({"kind": "score", "min": 1, "max": 10}, _fail)
    assert parse_outcome(encode(spec), "### 102").status == "unparseable"
    assert parse_outcome(encode(spec), "### 102").reason == "out_of_scale"
    assert parse_outcome(encode(spec), "### 7").value == 7.0
    assert parse_outcome(encode(spec), "I'd say 8/10.").status == "unparseable"  # not a bare score line
    assert parse_outcome(encode(spec), "8/10").value == 8.0
    with pytest.raises(UserError, match="reversed"):
        get_kind("score").spec({"kind": "score", "min": 10, "max": 1}, _fail)


def test_label_parsing_and_refusals() -> None:
    answer_type = encode(get_kind("label").spec(SPECS["label"], _fail))
    assert parse_outcome(answer_type, "### Yes").unit == "yes"
    assert parse_outcome(answer_type, "### cannot decide").value == 2.0
    assert parse_outcome(answer_type, "No, because the income is too low.").unit == "no"
    assert parse_outcome(answer_type, "yes or no, hard to say").status == "unparseable"
    assert parse_outcome(answer_type, "I cannot help with that request.").status == "refused"
    assert parse_outcome(answer_type, "").status == "unparseable"


def test_label_positive_label_goes_first_and_is_what_the_analysis_measures() -> None:
    kind = get_kind("label")
    spec = kind.spec({"kind": "label", "labels": ["approve", "deny"], "positive": "deny"}, _fail)
    assert spec.labels == ("deny", "approve")
    frame = pd.DataFrame({"value": [0.0, 1.0, np.nan]})
    assert np.array_equal(kind.measure(spec, frame), np.array([100.0, 0.0, np.nan]), equal_nan=True)


def test_choice_maps_the_chosen_option_back_to_what_it_stands_for() -> None:
    spec = get_kind("choice").spec({"kind": "choice", "options": ["A", "B"]}, _fail)
    frame = pd.DataFrame({"value": [0.0, 1.0], "option_A": ["Emily", "Lakisha"], "option_B": ["Lakisha", "Emily"],
                          "identifier": ["x", "y"], "status": ["ok", "ok"]})
    rows = chosen_rows(spec, frame)
    won = rows[rows["y"] == 100.0]
    assert sorted(won["identifier"]) == ["Emily", "Emily"]
    assert set(rows["position"]) == {"A", "B"}


def test_text_metric_is_recomputed_from_the_raw_text() -> None:
    kind = get_kind("text")
    spec = kind.spec({"kind": "text"}, _fail)
    assert parse_outcome(encode(spec), "Photosynthesis turns light into sugar.").value == 5.0
    frame = pd.DataFrame({"response": ["one two three", None], "status": ["ok", "unparseable"]})
    assert np.array_equal(kind.measure(spec, frame), np.array([3.0, np.nan]), equal_nan=True)
    with pytest.raises(UserError, match="unknown text metric"):
        kind.spec({"kind": "text", "metrics": ["flesch"]}, _fail)


def test_declared_answer_type_wins_over_the_use_case_name() -> None:
    """A user's use case named salary_estimation with answer_type percent parses percentages."""
    parser = ResponseParser("default")
    key = parser.key_for("salary_estimation", "percent")
    parsed = parser.parse("### 12 %", "stop", key)
    assert (parsed.status, parsed.value) == ("ok", 12.0)
    label_key = parser.key_for("salary_estimation", "label:yes|no")
    assert parser.parse("### no", "stop", label_key).unit == "no"


def test_a_kind_is_asked_through_its_declared_members_with_their_defaults() -> None:
    from counterbench.outcomes import defines, member
    from counterbench.outcomes.base import OutcomeSpec

    bare = object()  # a kind that defines no optional member
    assert member(bare, "pair_tables") is False and member(bare, "selection") == "above_median"
    assert member(bare, "sim_default")(OutcomeSpec("agreement", low=1, high=5)) == pytest.approx(3.4)
    assert member(bare, "probability_labels")(OutcomeSpec("agreement")) == ()
    assert member(get_kind("amount"), "pair_tables") is True
    assert member(get_kind("label"), "probability_labels")(spec_from_answer_type("label:yes|no")) == ("yes", "no")
    assert defines(get_kind("choice"), "option_values") and not defines(get_kind("rate"), "option_values")
    with pytest.raises(AttributeError, match="not an optional member"):
        member(bare, "pair_table")  # a misspelt member is a bug, never a silent default


def test_a_text_answer_stored_value_is_its_measure_without_the_text() -> None:
    """Found by the study generator: the viewer (stored values, no text) crashed on a store with ``text``
    answers (``KeyError: 'status'``): the stored value is the first metric already."""
    import numpy as np

    from counterbench.outcomes.units import answer_measures

    measured = answer_measures("text:length", np.array([12.0, np.nan, 40.0]))
    assert np.array_equal(measured, np.array([12.0, np.nan, 40.0]), equal_nan=True)
