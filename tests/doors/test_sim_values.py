"""A simulation file's values are typed: every number finite (no ``.nan``/``.inf``), probabilities in
[0, 1], and a use case that is a misspelling of one of the run's (``aproval``) refused with the right name;
one line and exit 2 through the CLI, nothing stored."""

from __future__ import annotations

from pathlib import Path

import pytest

import counterbench
from counterbench.errors import UserError
from counterbench.models.simulated import create_simulated
from tests.conftest import REPO, run_cli_here

CROSSED = REPO / "examples" / "approval_crossed.yaml"
NUMBER_KEYS = [
    ("noise_sd: {v}\n", "noise_sd"),
    ("refusal_rate: {v}\n", "refusal_rate"),
    ("malformed_rate: {v}\n", "malformed_rate"),
    ("latency_ms: {v}\n", "latency_ms"),
    ("default: {{default: {v}}}\n", "default.default"),
    ("default: {{range: [1, {v}]}}\n", "default.range"),
    ("default: {{round_to: {v}}}\n", "default.round_to"),
    ("default: {{anchor: {{factor: {v}}}}}\n", "default.anchor.factor"),
    ("default: {{anchor: {{lpa_below: {v}}}}}\n", "default.anchor.lpa_below"),
    ("default: {{profiles: {{p1: {v}}}}}\n", "default.profiles.p1"),
    ("use_cases: {{approval: {{default: {v}}}}}\n", "use_cases.approval.default"),
    ("answer_types: {{inr: {{default: {v}}}}}\n", "answer_types.inr.default"),
    ("outcomes: {{score: {{default: {v}}}}}\n", "outcomes.score.default"),
    ("outcomes: {{label: {{default: {v}}}}}\n", "outcomes.label.default"),
    ("identifier_effects: {{Black: {v}}}\n", "identifier_effects.Black"),
    ("identifier_effects_by_use_case: {{approval: {{Black: {v}}}}}\n", "identifier_effects_by_use_case.approval.Black"),
    ("profile_effects: {{p1: {v}}}\n", "profile_effects.p1"),
    ("language_effects: {{en: {v}}}\n", "language_effects.en"),
    ("effects: [{{match: {{race: Black}}, multiply: {v}}}]\n", "effects[0].multiply"),
    ("effects: [{{match: {{race: Black}}, add: {v}}}]\n", "effects[0].add"),
]


def _sim(tmp_path: Path, text: str) -> str:
    path = tmp_path / "model.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf"])
@pytest.mark.parametrize(("template", "key"), NUMBER_KEYS)
def test_not_a_finite_number_is_refused_naming_the_key(tmp_path: Path, template: str, key: str, value: str) -> None:
    path = _sim(tmp_path, template.format(v=value))
    with pytest.raises(UserError) as err:
        create_simulated(path)
    assert str(err.value).startswith(f"{path}: {key} must be a finite number"), str(err.value)


@pytest.mark.parametrize(("text", "message"), [
    ("refusal_rate: 1.5\n", "refusal_rate must be between 0 and 1"),
    ("outcomes: {label: {default: 1.5}}\n", "outcomes.label.default is a probability and must be between 0 and 1"),
    ("outcomes: {choice: {default: -0.1}}\n", "outcomes.choice.default is a probability"),
    ("noise_sd: yes\n", "noise_sd must be a number, got True"),
])
def test_a_probability_out_of_range_is_refused_at_load(tmp_path: Path, text: str, message: str) -> None:
    path = _sim(tmp_path, text)
    with pytest.raises(UserError, match=message):
        create_simulated(path)


def test_a_use_case_probability_out_of_range_is_refused_before_the_run(tmp_path: Path) -> None:
    path = _sim(tmp_path, "use_cases: {approval: {default: 1.5}}\n")
    store = tmp_path / "s.db"
    done = run_cli_here("run", str(CROSSED), "-m", f"sim:{path}", "--store", str(store))
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"counterbench: error: {path}: use_cases.approval.default is a probability (its answers are label answers) "
        "and must be between 0 and 1, got 1.5"]
    assert not store.exists()
    create_simulated(_sim(tmp_path, "use_cases: {approval: {default: 0.7}}\n")).check_prompts(
        counterbench.prompts(str(CROSSED)))


@pytest.mark.parametrize("key", ["use_cases", "identifier_effects_by_use_case"])
def test_a_misspelt_use_case_is_refused_with_the_real_one(tmp_path: Path, key: str) -> None:
    value = "{default: 0.6}" if key == "use_cases" else "{Black: 0.9}"
    path = _sim(tmp_path, f"{key}: {{aproval: {value}}}\n")
    store = tmp_path / "s.db"
    done = run_cli_here("run", str(CROSSED), "-m", f"sim:{path}", "--store", str(store))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert (f"{path}: {key}.aproval: no prompt of this run has use case 'aproval'; did you mean 'approval'?"
            in done.stderr)
    assert not store.exists()


def test_a_use_case_of_another_study_is_not_a_misspelling(tmp_path: Path) -> None:
    """Distinct real names stay apart (the cutoff is high): a file for several studies is not refused."""
    path = _sim(tmp_path, "use_cases: {appraisal: {default: 0.6}, salary_estimation: {default: 900000}}\n")
    create_simulated(path).check_prompts(counterbench.prompts(str(CROSSED)))
