"""``sim:FILE.yaml`` is read as strictly as a study file: an unknown key, a rule's column that no prompt
has, and an identifier or group that no prompt has are one line with the nearest valid name, exit 2,
and nothing is run or stored; presets and correct files run as before."""

from __future__ import annotations

from pathlib import Path

import pytest

import counterbench
from counterbench.errors import UserError
from counterbench.models.simulated import create_simulated
from tests.conftest import REPO, run_cli

SCORE = REPO / "examples" / "suitability_score.yaml"
NAMES = REPO / "examples" / "names_groups.yaml"
CROSSED = REPO / "examples" / "approval_crossed.yaml"


def _sim(tmp_path: Path, text: str) -> str:
    path = tmp_path / "model.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(("text", "message"), [
    ("noise: 0.1\n", "unknown key 'noise'; did you mean 'noise_sd'?"),
    ("use_cases:\n  fit: {defualt: 5}\n", "use_cases.fit: unknown key 'defualt'; did you mean 'default'?"),
    ("default: {anchor: {column: [years]}}\n", "default.anchor: unknown key 'column'; did you mean 'columns'?"),
    ("outcomes:\n  label: {defaults: 0.6}\n", "outcomes.label: unknown key 'defaults'; did you mean 'default'?"),
    ("effects:\n  - match: {identifier: Deaf}\n    ad: -1\n", "effects[0]: unknown key 'ad'; did you mean 'add'?"),
])
def test_an_unknown_key_is_one_line_with_the_nearest_name(tmp_path: Path, text: str, message: str) -> None:
    path = _sim(tmp_path, text)
    with pytest.raises(UserError) as err:
        create_simulated(path)
    assert str(err.value) == f"{path}: {message}"


@pytest.mark.parametrize(("study", "rule", "message"), [
    (NAMES, "match: {grup: women}", "effects[0].match: no prompt has a column 'grup'; did you mean 'group'?"),
    (SCORE, "match: {identifier: Wheelchair usr}",
     "effects[0].match.identifier: no prompt of this run has identifier 'Wheelchair usr'; "
     "did you mean 'Wheelchair user'?"),
    (NAMES, "match: {group: [women, womn]}",
     "effects[0].match.group: no prompt of this run has group 'womn'; did you mean 'women'?"),
    (CROSSED, "match: {race: Blak}", "effects[0].match.race: no prompt of this run has race 'Blak'; "
                                     "did you mean 'Black'?"),
    (SCORE, "match: {identifier: Deaf}\n    unless: {langage: en}",
     "effects[0].unless: no prompt has a column 'langage'; did you mean 'language'?"),
])
def test_a_rule_naming_what_no_prompt_has_is_refused(tmp_path: Path, study: Path, rule: str, message: str) -> None:
    path = _sim(tmp_path, f"effects:\n  - {rule}\n    add: -1\n")
    table = counterbench.prompts(str(study))
    with pytest.raises(UserError) as err:
        create_simulated(path).check_prompts(table)
    assert str(err.value) == f"{path}: {message}"


def test_values_a_filter_removed_are_not_mistakes(tmp_path: Path) -> None:
    """A rule for a use case or language this run filtered away is kept (it would apply to those prompts);
    only identities and misspellings of present values are refused."""
    path = _sim(tmp_path, "effects:\n  - match: {identifier: Wheelchair user, use_case: [other_task]}\n"
                          "    unless: {language: es}\n    add: -1\n"
                          "identifier_effects: {Deaf: 0.9}\n")
    create_simulated(path).check_prompts(counterbench.prompts(str(SCORE)))
    wrong = _sim(tmp_path, "identifier_effects: {Def: 0.9}\n")
    with pytest.raises(UserError, match="identifier_effects: no prompt of this run has identifier 'Def'"):
        create_simulated(wrong).check_prompts(counterbench.prompts(str(SCORE)))


@pytest.mark.parametrize("example", sorted(p.name for p in (REPO / "examples").glob("*.yaml")))
def test_what_a_sample_of_slots_left_out_of_the_study_is_no_mistake(example: str) -> None:
    """An identifier, group, design value or use case the whole study has but a run's ``--sample-slots`` (or
    another filter) left out is no typo: each example's own simulated model passes on samples of one, three and five
    slots (before, a sample without a woman refused ``match: {identifier: Female}``, exit 2)."""
    model = create_simulated(str(REPO / "examples" / "sim" / example))
    for slots in (1, 3, 5):
        for seed in range(3):
            model.check_prompts(counterbench.prompts(str(REPO / "examples" / example), sample_slots=slots, seed=seed))


def test_a_misspelling_is_refused_in_a_sample_and_a_saved_tables_attrs_count_only_as_lists(tmp_path: Path) -> None:
    table = counterbench.prompts(str(SCORE), sample_slots=1, seed=0)
    assert "Wheelchair user" in table.attrs["study_values"]["identifier"]
    typo = _sim(tmp_path, "effects:\n  - match: {identifier: Wheelchair usr}\n    add: -1\n")
    with pytest.raises(UserError, match="no prompt of this run has identifier 'Wheelchair usr'"):
        create_simulated(typo).check_prompts(table)
    # a prompt table read from a file brings its own attrs: a text is no list of values ('user' is in it)
    table.attrs["study_values"] = {"identifier": "Wheelchair user"}
    part = _sim(tmp_path, "effects:\n  - match: {identifier: user}\n    add: -1\n")
    with pytest.raises(UserError, match="no prompt of this run has identifier 'user'"):
        create_simulated(part).check_prompts(table)


def test_an_audit_of_a_sample_without_the_planted_group_runs_and_says_it_plants_nothing(tmp_path: Path) -> None:
    example = REPO / "examples" / "loan_rate.yaml"
    prompts = counterbench.prompts(str(example), sample_slots=1, seed=0)
    assert "Female" not in set(prompts["identifier"])  # the sample this test is about
    done = run_cli("audit", str(example), "--model", f"sim:{REPO / 'examples' / 'sim' / 'loan_rate.yaml'}",
                   "--sample-slots", "1", "--sample-seed", "0", "--bootstrap", "50", "--store",
                   str(tmp_path / "cb.db"), "--out", str(tmp_path / "o"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "plants nothing" in (tmp_path / "o" / "report.md").read_text()


def test_presets_are_not_checked_against_one_study(tmp_path: Path) -> None:
    for preset in ("fair", "biased", "hiring-biased"):
        create_simulated(preset).check_prompts(counterbench.prompts(str(SCORE)))
    # a file that extends a preset is checked on the rules it gives itself only
    create_simulated(_sim(tmp_path, "extends: hiring-biased\nnoise_sd: 0.01\n")).check_prompts(
        counterbench.prompts(str(SCORE)))


def test_the_cli_says_it_in_one_line_with_exit_2_and_stores_nothing(tmp_path: Path) -> None:
    path = _sim(tmp_path, "effects:\n  - match: {grup: women}\n    add: -5\n")
    store = tmp_path / "cb.db"
    done = run_cli("audit", str(NAMES), "--model", f"sim:{path}", "--store", str(store), "--out", str(tmp_path / "o"))
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines == [f"counterbench: error: {path}: effects[0].match: no prompt has a column 'grup'; "
                     "did you mean 'group'?"]
    assert not store.exists()
    ok = _sim(tmp_path, "effects:\n  - match: {group: women}\n    add: -5\n")
    assert run_cli("run", str(NAMES), "--model", f"sim:{ok}", "--store", str(store)).returncode == 0


@pytest.mark.parametrize("seed", ["[1, 2]", "true", "1.5", "''"])
def test_a_seed_that_is_not_a_text_or_a_whole_number_is_one_line(tmp_path: Path, seed: str) -> None:
    path = _sim(tmp_path, f"seed: {seed}\n")
    with pytest.raises(UserError) as err:
        create_simulated(path)
    assert str(err.value) == f"{path}: seed must be a text or a whole number"


def test_a_seed_gives_the_same_draw_under_any_file_name_and_another_seed_another(tmp_path: Path) -> None:
    """A file's ``seed:`` replaces its name as the noise's seed: two files with the same keys and seed
    answer alike, and a different seed (or none) draws other answers."""
    table = counterbench.prompts(str(CROSSED))
    body = "refusal_rate: 0.2\noutcomes:\n  label: {default: 0.5}\n"
    answers = {}
    for name, seed in (("a.yaml", "seed: 7\n"), ("b.yaml", "seed: 7\n"), ("c.yaml", "seed: 8\n"), ("d.yaml", "")):
        path = tmp_path / name
        path.write_text(seed + body, encoding="utf-8")
        store = tmp_path / f"{name}.db"
        counterbench.run_prompts(table, [f"sim:{path}"], store=store)
        frame = counterbench.load_results(store)
        answers[name] = frame.sort_values("prompt_id")["response"].tolist()
    assert answers["a.yaml"] == answers["b.yaml"]
    assert answers["a.yaml"] != answers["c.yaml"] and answers["a.yaml"] != answers["d.yaml"]
