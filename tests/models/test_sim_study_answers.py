"""A study says what a simulated model answers for its use cases (its ``simulated_answers`` hook,
``counterbench.models.sim_answers``): a third-party study registered in code gets its own figures and
refusal text from ``sim:fair`` and from a simulation file, the file's own ``use_cases`` still win, another
study's prompts are left alone, and a mistake in the hook's answers is one line naming the study."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import counterbench
from counterbench.errors import UserError
from counterbench.models import sim_answers
from counterbench.models.base import ChatRequest
from counterbench.models.simulated import create_simulated
from counterbench.run.results import load_results
from counterbench.studies.declarative import DeclarativeStudy
from counterbench.studies.definition import parse_study, read_study_mapping
from counterbench.studies.registry import STUDIES, register_study
from tests.conftest import REPO

NAME = "rent_quote_answers"
REFUSAL = "I will not quote a rent for this tenant."
ANSWERS = {"use_cases": {"rent_quote": {"unit": "INR", "default": 77000, "round_to": 1000}},
           "refusal_text": REFUSAL}


class RentQuotes(DeclarativeStudy):
    """examples/rent_quote.yaml under another name, with its simulated answers (a third party's study)."""

    simulated_answers = ANSWERS


def _study(name: str = NAME) -> RentQuotes:
    data = read_study_mapping(REPO / "examples" / "rent_quote.yaml")
    data["name"] = name
    return RentQuotes(parse_study(data, source="test"))


@pytest.fixture
def registered() -> Iterator[RentQuotes]:
    study = _study()
    register_study(NAME, study)
    yield study
    STUDIES.unregister(NAME)
    sim_answers.unregister(NAME)


def _responses(study: RentQuotes, model: str, tmp_path: Path) -> list[str]:
    table = counterbench.prompts(study, language=["en"])
    assert set(table["study"]) == {study.name}
    store = tmp_path / f"cb{len(list(tmp_path.iterdir()))}.db"
    counterbench.run_prompts(table, [model], store=store)
    return list(load_results(store)["response"])


def _sim_file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "model.yaml"
    path.write_text(text, encoding="utf-8")
    return f"sim:{path}"


def test_sim_fair_answers_a_third_party_study_with_its_own_figures(registered: RentQuotes, tmp_path: Path) -> None:
    values = [float(r.split()[1]) for r in _responses(registered, "sim:fair", tmp_path) if r.startswith("### ")]
    assert len(values) >= 18  # 20 English prompts, 1% refusals and 1% malformed
    assert all(70_000 <= v <= 85_000 for v in values)  # 77,000 with 3% noise, not the `inr` default 50,000


def test_a_study_object_given_unregistered_is_answered_the_same(tmp_path: Path) -> None:
    """``counterbench.prompts(study)`` with a study object nobody registered: its name now finds its answers."""
    study = _study(NAME + "_object")
    assert sim_answers.study_answers(study.name) is None
    try:
        table = counterbench.prompts(study, language=["en"])
        assert set(table["study"]) == {study.name}
        answers = sim_answers.study_answers(study.name)
        assert answers is not None and answers.refusal_text == REFUSAL
    finally:
        sim_answers.unregister(study.name)


def test_its_refusal_text_and_a_file_s_own_use_cases(registered: RentQuotes, tmp_path: Path) -> None:
    model = _sim_file(tmp_path, "extends: fair\nnoise_sd: 0\nrefusal_rate: 0.5\nmalformed_rate: 0\n")
    assert set(_responses(registered, model, tmp_path)) == {"### 77000 INR", REFUSAL}
    own = _sim_file(tmp_path, "extends: fair\nnoise_sd: 0\nrefusal_rate: 0\nmalformed_rate: 0\n"
                              "use_cases:\n  rent_quote: {unit: INR, default: 90000}\n")
    assert set(_responses(registered, own, tmp_path)) == {"### 90000 INR"}  # the file's own entry wins


def test_without_the_hook_the_preset_s_defaults(tmp_path: Path) -> None:
    """The same study without a hook (a study file): the `inr` answer type's default and generic texts."""
    study = REPO / "examples" / "rent_quote.yaml"
    table = counterbench.prompts(study, language=["en"])
    backend = create_simulated(_sim_file(tmp_path, "extends: fair\nnoise_sd: 0\nrefusal_rate: 0\n")[4:])
    row = table.iloc[0]
    request = ChatRequest(str(row["prompt_id"]), str(row["system"]), str(row["user"]), answer_type="inr",
                          metadata={k: row[k] for k in ("study", "use_case", "profile_id", "identifier")})
    assert backend.answer(request) == "### 50000 INR"
    assert sim_answers.study_answers(str(row["study"])) is None


def test_a_mistake_in_the_hook_s_answers_is_one_line(registered: RentQuotes) -> None:
    registered.simulated_answers = {"use_cases": {"rent_quote": {"defualt": 5}}}  # type: ignore[assignment]
    register_study(NAME, registered, replace=True)
    with pytest.raises(UserError, match=rf"study {NAME}: simulated_answers: use_cases.rent_quote: unknown key "
                                        "'defualt'; did you mean 'default'"):
        sim_answers.study_answers(NAME)


def test_rupeebias_gives_its_answers_through_the_hook() -> None:
    """The built-in study's figures are its own (``builtin/rupeebias/sim_answers.yaml``), found by name and
    for prompts without a study (the default study)."""
    answers = sim_answers.study_answers("rupeebias")
    assert answers is not None and answers.use_cases["salary_estimation"].profiles["P01"] == 2_400_000
    assert "salary" in answers.refusal_text
    assert sim_answers.study_answers(None) is answers


def test_a_copy_sent_to_a_worker_keeps_the_study_s_answers(registered: RentQuotes, tmp_path: Path) -> None:
    """The run finds the answers before the first request (``check_prompts``); a pickled copy (a Ray worker's,
    where a study registered in code is unknown) answers the same."""
    import pickle

    table = counterbench.prompts(registered, language=["en"])
    backend = create_simulated(_sim_file(tmp_path, "extends: fair\nnoise_sd: 0\nrefusal_rate: 0\n")[4:])
    backend.check_prompts(table)
    row = table.iloc[0]
    request = ChatRequest(str(row["prompt_id"]), str(row["system"]), str(row["user"]), answer_type="inr",
                          metadata={k: row[k] for k in ("study", "use_case", "profile_id", "identifier")})
    copy = pickle.loads(pickle.dumps(backend))
    sim_answers.unregister(NAME)
    assert sim_answers.study_answers(NAME) is None
    assert copy.answer(request) == "### 77000 INR"
