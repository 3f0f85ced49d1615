"""The reading of a label or choice answer's log-probabilities: spellings merged, complete or not (an
incomplete value is missing, never 0), the mass the allowed answers hold, forced answers; stored per
answer in ``answer_complete``, ``answer_mass``, ``answer_forced``; what the fake server and simulated
models return for it."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import pandas as pd
import pytest

import counterbench
from counterbench.models.base import ChatRequest, GenerationConfig
from counterbench.models.sim_logprobs import answer_tokens, ordinal_probabilities, spellings
from counterbench.outcomes.logprobs import FORCED_NATS, answer_columns, answer_probabilities, read_answer
from counterbench.run.results import load_results
from counterbench.testing._fakecore import label_probabilities
from counterbench.testing.fake_openai import FakeOpenAIServer, FaultConfig, run_in_thread
from tests.conftest import REPO

from .conftest import fake_model

LN = math.log


def test_spellings_are_merged_and_a_missing_label_makes_the_reading_incomplete() -> None:
    # SmolLM2's answer position after "### ": its top two are " Yes" and " yes"; "no" is not listed
    two = [("###", 0.0, ()), (" yes", LN(0.13), ((" Yes", LN(0.22)), (" yes", LN(0.13))))]
    reading = read_answer(["yes", "no"], two)
    assert reading is not None and not reading.complete
    assert reading.logprobs == pytest.approx({"yes": LN(0.35)}) and reading.mass == pytest.approx(0.35)
    assert answer_probabilities(json.dumps(reading.logprobs), ["yes", "no"], reading.complete) is None  # not 1.0
    # with more listed, "no" is there (two spellings and a first token "n" of a longer spelling); the listed
    # tokens leave 0.002 unlisted, too little for an unlisted spelling to move p by 0.5 pp
    listed = ((" Yes", LN(0.22)), (" No", LN(0.17)), (" no", LN(0.15)), (" yes", LN(0.13)), (" n", LN(0.01)),
              (" The", LN(0.05)), (" Maybe", LN(0.268)))
    reading = read_answer(["yes", "no"], [("###", 0.0, ()), (" yes", LN(0.13), listed)])
    assert reading is not None and reading.complete and reading.forced is False
    assert reading.mass == pytest.approx(0.68)
    p = answer_probabilities(reading.logprobs, ["yes", "no"], reading.complete)
    assert p is not None and p["yes"] == pytest.approx(0.35 / 0.68)
    # every answer listed, but 0.27 unlisted where more spellings could be: incomplete (--logprobs 5 on a
    # server with three spellings each moved a planted -15.9 pp gap to -14.5 pp before this rule)
    reading = read_answer(["yes", "no"], [("###", 0.0, ()), (" yes", LN(0.13), listed[:-1])])
    assert reading is not None and not reading.complete and set(reading.logprobs) == {"yes", "no"}


def test_a_missing_label_that_cannot_matter_keeps_the_reading_complete() -> None:
    """The listed tokens leave 1e-6 of the probability: "no" holds at most that, so p moves by < 0.5 pp."""
    top = ((" yes", LN(0.7)), (" Yes", LN(0.2999)), (" Y", LN(0.000099)))
    reading = read_answer(["yes", "no"], [("###", 0.0, ()), (" yes", LN(0.7), top)])
    assert reading is not None and reading.complete and "no" not in reading.logprobs
    assert answer_probabilities(reading.logprobs, ["yes", "no"], reading.complete) == {"yes": 1.0, "no": 0.0}
    # the least likely listed token bounds each unlisted spelling: 20 listed at e^-12 or more leave "no" < 1e-4
    many = (*tuple((f" w{i}", -12.0) for i in range(17)), (" yes", LN(0.99)), (" Yes", LN(0.005)))
    reading = read_answer(["yes", "no"], [(" yes", LN(0.99), many)])
    assert reading is not None and reading.complete
    # ...but not when the least likely listed token is likely itself
    few = ((" yes", LN(0.5)), (" Yes", LN(0.3)))
    reading = read_answer(["yes", "no"], [(" yes", LN(0.5), few)])
    assert reading is not None and not reading.complete


def test_a_forced_answer_is_one_far_below_the_preferred_token() -> None:
    """Gemma-3-270M wants digits after "### "; the grammar writes "yes" at -19.6."""
    top = ((" 1", -0.05), (" 2", -3.2), (" yes", -19.6), (" no", -20.4))
    reading = read_answer(["yes", "no"], [("###", -8.0, ()), (" yes", -19.6, top)])
    assert reading is not None and reading.forced is True and reading.below_best == pytest.approx(19.55)
    # both listed, but they hold 4.5e-9 and the unlisted tokens could hold spellings as likely: incomplete
    assert not reading.complete and reading.mass < 1e-8
    listed = (*top, (" 3", math.log(1.0 - sum(math.exp(lp) for _, lp in top))))  # the rest listed: complete
    reading = read_answer(["yes", "no"], [("###", -8.0, ()), (" yes", -19.6, listed)])
    assert reading is not None and reading.complete and reading.forced is True
    near = ((" no", -0.6), (" yes", -0.6 - FORCED_NATS + 0.01))
    assert read_answer(["yes", "no"], [(" yes", near[1][1], near)]).forced is False  # type: ignore[union-attr]
    alone = read_answer(["yes", "no"], [(" yes", -0.1, ())])  # nothing listed: unknown
    assert alone is not None and alone.forced is None and not alone.complete
    assert answer_columns("label:yes|no", [("###", 0.0, ()), (" yes", -19.6, listed)])[1:] == (
        1, pytest.approx(math.exp(-19.6) + math.exp(-20.4)), 1)
    assert answer_columns("score:1:10", [(" yes", -0.1, top)]) == (None, None, None, None)
    assert answer_columns("label:yes|no", None) == (None, None, None, None)


def test_the_simulated_tokens_say_the_planted_probabilities() -> None:
    assert spellings("yes", " ", 0.4) == [(" yes", 0.6), (" Yes", 0.2), ("yes", 0.2)]
    assert spellings("B", "", 0.3) == [("B", 0.7), ("b", 0.15), (" B", 0.15)]
    assert spellings("1", " ", 0.3) == [(" 1", 0.7), ("1", 0.3)]
    planted = {"yes": 0.1, "no": 0.9}  # split 40%: " no" .54, " No" .18, "no" .18, " yes" .06
    for variants, top, complete in ((0.0, 2, True), (0.4, 20, True), (0.4, 2, False)):
        tokens = answer_tokens("### no", planted, top, variants=variants)
        reading = read_answer(["yes", "no"], tokens)
        assert reading is not None and reading.complete is complete, (variants, top)
        if complete:
            assert answer_probabilities(reading.logprobs, ["yes", "no"], True) == pytest.approx(planted)
    forced = read_answer(["yes", "no"], answer_tokens("### no", planted, 5, mass=1e-8))
    assert forced is not None and forced.forced and forced.mass == pytest.approx(1e-8)
    assert answer_tokens("I cannot say.", planted, 5) is None


def test_the_ordinal_choice_probabilities_are_the_simulated_answer_frequencies() -> None:
    from counterbench.models.simulated import SimulatedBackend, profile_from_dict

    options = {"A": 1.0, "B": 2.0, "C": 3.0, "D": 4.0, "E": 5.0}
    backend = SimulatedBackend("sim:ordinal", profile_from_dict({"noise_sd": 0.3, "use_cases": {"u": {"default": 3}}}))
    meta = {"use_case": "u", **{f"option_{k}": v for k, v in options.items()}}
    requests = [ChatRequest(f"p{i}", "", "", answer_type="choice:A|B|C|D|E", metadata=meta) for i in range(4000)]
    counts = pd.Series([backend.answer(r)[-1] for r in requests]).value_counts(normalize=True)
    planted = backend.planted_probabilities(requests[0])
    assert planted == pytest.approx(ordinal_probabilities(options, 3.0, 0.3))
    assert sum(planted.values()) == pytest.approx(1.0)
    for label, p in planted.items():
        assert counts.get(label, 0.0) == pytest.approx(p, abs=0.025), label
    assert ordinal_probabilities(options, 3.2, 0.0) == {"A": 0.0, "B": 0.0, "C": 1.0, "D": 0.0, "E": 0.0}


@pytest.fixture(scope="module")
def label_prompts() -> pd.DataFrame:
    table = counterbench.prompts(str(REPO / "examples" / "approval_crossed.yaml"))
    return table.head(16).reset_index(drop=True)


def test_the_reading_is_stored_per_answer(tmp_path: Path, label_prompts: pd.DataFrame) -> None:
    """A server whose answers split 40% of each label's weight across spellings: with --logprobs 2 the
    answers that miss a label are stored incomplete, with 20 all are complete and exact; mass 1, none forced."""
    config = FaultConfig(label_variants=0.4)
    stored = {}
    with run_in_thread(FakeOpenAIServer(config)) as server:
        for top in (2, 20):
            counterbench.run_prompts(label_prompts, [fake_model(server)], store=tmp_path / f"n{top}.db", logprobs=top,
                                     handle_signals=False)
            stored[top] = load_results(tmp_path / f"n{top}.db").set_index("prompt_id")
    for top, frame in stored.items():
        assert frame["answer_forced"].eq(0).all() and frame["answer_mass"].notna().all()
        for row in label_prompts.itertuples():
            truth = label_probabilities(row.system, row.user)
            assert truth is not None
            got = frame.loc[row.prompt_id]
            p = answer_probabilities(got["answer_logprobs"], ["yes", "no"], got["answer_complete"])
            if top == 20:
                assert got["answer_complete"] == 1 and got["answer_mass"] == pytest.approx(1.0)
                assert p == pytest.approx(truth)
            elif got["answer_complete"] == 1:
                assert p == pytest.approx(truth)  # both written spellings listed: the split is proportional
            else:
                assert p is None and got["answer_mass"] < 1.0
    assert stored[2]["answer_complete"].eq(0).any()  # the spellings took the slots


def test_a_forcing_server_is_stored_forced(tmp_path: Path, label_prompts: pd.DataFrame) -> None:
    with run_in_thread(FakeOpenAIServer(FaultConfig(label_mass=3e-9))) as server:
        counterbench.run_prompts(label_prompts, [fake_model(server)], store=tmp_path / "f.db", logprobs=5,
                                 handle_signals=False)
    frame = load_results(tmp_path / "f.db")
    assert frame["answer_forced"].eq(1).all() and frame["answer_complete"].eq(1).all()
    assert (frame["answer_mass"] < 1e-8).all()


def test_a_simulated_model_speaks_log_probabilities(tmp_path: Path) -> None:
    """``--logprobs`` on ``sim:``: the planted p(yes) of each prompt comes back (it was silently none)."""
    from counterbench.models.simulated import create_simulated

    sim = tmp_path / "split.yaml"
    sim.write_text("outcomes: {label: {default: 0.3}}\neffects: [{match: {race: Black}, add: -0.1}]\n"
                   "logprobs: {variants: 0.4, mass: 0.9}\n", encoding="utf-8")
    table = counterbench.prompts(str(REPO / "examples" / "approval_crossed.yaml")).head(24)
    backend = create_simulated(str(sim))
    for top in (0, 2, 20):
        counterbench.run_prompts(table, [f"sim:{sim}"], store=tmp_path / f"s{top}.db", logprobs=top,
                                 handle_signals=False)
        frame = load_results(tmp_path / f"s{top}.db").set_index("prompt_id")
        if top == 0:
            assert frame["answer_logprobs"].isna().all() and frame["answer_complete"].isna().all()
            continue
        assert frame["answer_mass"].dropna().le(0.9 + 1e-9).all()
        for row in table.to_dict("records"):
            request = ChatRequest(row["prompt_id"], row["system"], row["user"], answer_type=row["answer_type"],
                                  metadata=row)
            planted = backend.planted_probabilities(request)
            assert planted is not None and planted["yes"] == pytest.approx(0.2 if row["race"] == "Black" else 0.3)
            got = frame.loc[row["prompt_id"]]
            p = answer_probabilities(got["answer_logprobs"], ["yes", "no"], got["answer_complete"])
            if top == 20:
                assert p == pytest.approx(planted)
            else:  # the top two: " no" and one of its spellings, or " no" and " yes"
                assert p is None or p == pytest.approx(planted)
    result = asyncio.run(backend.complete(ChatRequest("x", "", "", GenerationConfig(logprobs=3), "label:yes|no",
                                                      {"use_case": "approval"})))
    assert result.token_logprobs is not None and len(result.token_logprobs[-1][2]) == 3


@pytest.mark.parametrize("text, message", [
    ("logprobs: {variants: 1.0}\n", "logprobs.variants must be at least 0 and below 1"),
    ("logprobs: {mass: 0}\n", "logprobs.mass must be above 0"),
    ("logprobs: {mas: 0.5}\n", "unknown key 'mas'"),
    ("logprobs: 0.5\n", "logprobs must be a mapping"),
])
def test_a_sim_file_logprobs_key_is_checked(tmp_path: Path, text: str, message: str) -> None:
    from counterbench.errors import UserError
    from counterbench.models.simulated import load_profile

    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UserError, match=message):
        load_profile(str(path))
