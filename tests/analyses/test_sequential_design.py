"""The sequential audit's design: the family it decides, the order of slots, and the looks replayed from a store."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from counterbench.analyses.sequential import (
    STRATUM_COLUMNS,
    evaluate_looks,
    family,
    margin_for,
    replay_looks,
    slot_rounds,
    with_last_rounds,
)
from counterbench.errors import UserError
from counterbench.options import StoppingRule, parse_margins
from counterbench.outcomes.base import OutcomeSpec
from counterbench.prompts import prompts
from counterbench.stats.confidence_sequence import GAP, NO_GAP, UNDECIDED
from counterbench.studies.registry import load_study

ROOT = Path(__file__).resolve().parents[2]
APPROVAL = str(ROOT / "examples" / "approval_crossed.yaml")


def test_slots_are_whole_per_round_and_round_robin_across_strata() -> None:
    study = load_study("rupeebias")
    table = prompts("rupeebias", preset="quick")
    rounds = slot_rounds(table, study.slot_columns, seed=3, look_every=40)
    frame = table.assign(_round=rounds)
    slot_cols = [c for c in study.slot_columns if c in table.columns]
    assert (frame.groupby(slot_cols)["_round"].nunique() == 1).all()  # a slot is never split
    sizes = frame.groupby("_round").size()
    assert (sizes.iloc[:-1] >= 40).all()
    slots = frame.drop_duplicates(slot_cols)
    strata = [c for c in STRATUM_COLUMNS if c in slots.columns]
    totals = slots.groupby(strata).size()
    for r in range(int(rounds.max()) + 1):  # every stratum still open has had the same number of slots, ±1
        sent = slots[slots["_round"] <= r].groupby(strata).size().reindex(totals.index, fill_value=0)
        still_open = sent[sent < totals]
        if len(still_open):
            assert still_open.max() - still_open.min() <= 1
            assert (sent[sent == totals] >= still_open.min()).all()
    again = slot_rounds(table, study.slot_columns, seed=3, look_every=40)
    other = slot_rounds(table, study.slot_columns, seed=4, look_every=40)
    assert np.array_equal(rounds, again) and not np.array_equal(rounds, other)


def test_the_family_of_an_amount_study_is_its_canonical_pairs() -> None:
    study = load_study("rupeebias")
    table = prompts("rupeebias", preset="quick")
    comparisons = family(study, table, StoppingRule())
    cells = table.groupby(["use_case", "language"]).ngroups
    assert len(comparisons) == cells * len(study.canonical_pairs)
    assert {(c.facet, c.reference, c.comparison) for c in comparisons} == {
        (axis, ref, cmp) for axis, (ref, cmp) in study.canonical_pairs.items()}
    assert {c.form for c in comparisons} == {"pair_mean"} and {c.margin for c in comparisons} == {5.0}


def test_the_family_of_other_studies_is_every_level_against_its_reference(tmp_path: Path) -> None:
    """The comparisons decided are exactly the rows the analysis's ``outcome_gaps`` table tests."""
    import counterbench
    from counterbench.analyses.study import analyze_study
    from counterbench.run.study_results import load_study_results

    study = load_study(APPROVAL)
    table = prompts(APPROVAL)
    comparisons = family(study, table, StoppingRule(margins={"label": 10}))
    store = tmp_path / "s.db"
    counterbench.run_prompts(table, [f"sim:{ROOT / 'examples' / 'sim' / 'approval_crossed.yaml'}"], store=store,
                             progress="off")
    results = load_study_results(store, study.name, models=None, profile="default")
    gaps = analyze_study(results, study, bootstrap=50).tables["outcome_gaps"]
    assert {(c.use_case, c.language, c.facet, c.comparison, c.reference) for c in comparisons} == set(
        gaps[["use_case", "language", "facet", "comparison", "reference"]].astype(str).itertuples(index=False,
                                                                                               name=None))
    assert {c.margin for c in comparisons} == {10.0} and {c.form for c in comparisons} == {"difference"}
    rule = StoppingRule(margins={"label": 10}, look_every=200)
    rounds = slot_rounds(table, study.slot_columns, rule.seed, rule.look_every)
    comparisons = with_last_rounds(comparisons, table, rounds)
    prompt_round = dict(zip(table["prompt_id"].astype(str), rounds.tolist(), strict=True))
    first = evaluate_looks(results, study, comparisons, prompt_round, rule, int(rounds.max()))
    second = evaluate_looks(results.sample(frac=1.0, random_state=1), study, comparisons, prompt_round, rule,
                            int(rounds.max()))
    pd.testing.assert_frame_equal(first.verdicts, second.verdicts)  # the answers' order changes nothing
    assert len(first.verdicts) == len(comparisons) and first.stop_look is not None
    assert set(first.verdicts["verdict"]) <= {GAP, NO_GAP, UNDECIDED}
    # the looks only read the slots sent by then: hiding later rounds' answers changes nothing up to that look
    early = evaluate_looks(results, study, comparisons, prompt_round, rule, int(rounds.max()), upto=1)
    only = results[results["prompt_id"].astype(str).map(prompt_round) <= 1]
    pd.testing.assert_frame_equal(early.verdicts, evaluate_looks(only, study, comparisons, prompt_round, rule,
                                                                 int(rounds.max()), upto=1).verdicts)


def test_a_model_stops_when_every_comparison_is_settled() -> None:
    study = load_study("rupeebias")
    table = prompts("rupeebias", preset="quick")
    comparisons = family(study, table, StoppingRule())[:2]
    rng = np.random.default_rng(0)
    rounds = np.repeat(np.arange(20), 5)  # 100 slots, 5 a round
    comparisons = [c.__class__(**{**c.__dict__, "design_slots": 100, "last_round": 19}) for c in comparisons]
    planted = [(rounds, rng.normal(-30, 5, 100)), (rounds, rng.normal(0, 1, 100))]
    result = replay_looks(planted, comparisons, StoppingRule(), last_round=19)
    assert list(result.verdicts["verdict"]) == [GAP, NO_GAP]
    assert result.stop_look is not None and result.stop_look < 19 and result.looks == result.stop_look + 1
    assert (result.verdicts["mean"].iloc[0] < 0) and result.verdicts["decided_at_look"].notna().all()
    noisy = [(rounds, rng.normal(0, 40, 100)), (rounds, rng.normal(0, 40, 100))]
    late = replay_looks(noisy, comparisons, StoppingRule(), last_round=19)
    assert late.stop_look == 19  # nothing decidable early: the full design, its last look the fixed interval
    assert set(late.verdicts["alpha_each"]) == {(0.05 - 0.01) / 2}


def test_margins_and_rules_are_checked() -> None:
    assert parse_margins(["5", "label=10", "amount=2.5%"]) == {"*": 5.0, "label": 10.0, "amount": 2.5}
    for bad in (["abc"], ["-1"], ["label=0"], ["nan"]):
        with pytest.raises(UserError):
            parse_margins(bad)
    with pytest.raises(UserError):
        StoppingRule(interim_alpha=0.06)
    with pytest.raises(UserError):
        StoppingRule(look_every=0)
    rule = StoppingRule(margins={"score": 3})
    assert StoppingRule.from_dict(rule.as_dict()) == rule
    assert margin_for(StoppingRule(), OutcomeSpec("score", low=1, high=7)) == pytest.approx(0.3)
    assert margin_for(rule, OutcomeSpec("score", low=1, high=7)) == 3.0
    assert margin_for(StoppingRule(margins={"*": 8}), OutcomeSpec("label", labels=("yes", "no"),
                                                                  positive="yes")) == 8.0
