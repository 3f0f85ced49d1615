"""Strict study files: each kind of mistake is one line naming the problem (exit 2 from the CLI)."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from counterbench.errors import UserError
from counterbench.prompts import build_prompts

BASE: dict[str, Any] = {
    "name": "mini",
    "title": "Mini study",
    "languages": {"en": {"name": "English", "id_infix": "en"}, "es": {"name": "Spanish", "id_infix": "es"}},
    "axes": {"Gender": [{"value": "Male", "phrases": {"en": "I am a man", "es": "Soy hombre"}},
                        {"value": "Female", "phrases": {"en": "I am a woman", "es": "Soy mujer"}}]},
    "canonical_pairs": {"Gender": ["Male", "Female"]},
    "use_cases": {"fit": {
        "outcome": {"kind": "score", "min": 1, "max": 10},
        "template": {"en": "{identifier_phrase}. I am a {role}.\n{question}",
                     "es": "{identifier_phrase}. Soy {role}.\n{question}"},
        "question_variants": {"en": ["How good am I?"], "es": ["¿Qué tal soy?"]},
        "profiles": [{"profile_id": "P01", "role": "chef"}, {"profile_id": "P02", "role": "pilot"}],
    }},
}


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(d: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = d
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value
    return change


def _del(path: str) -> Callable[[dict[str, Any]], None]:
    def change(d: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = d
        for key in parents:
            node = node[key]
        del node[last]
    return change


MISTAKES: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("unknown key", _set("canonical_pair", {"Gender": ["Male", "Female"]}),
     "canonical_pair: unknown key 'canonical_pair'; did you mean 'canonical_pairs'?"),
    ("misplaced key", _set("use_cases.fit.canonical_pairs", {"Gender": ["Male", "Female"]}),
     "use_cases.fit.canonical_pairs: unknown key 'canonical_pairs'; 'canonical_pairs' belongs under the top level"),
    ("misspelt nested key", _set("axes.Gender.0.phrase", {"en": "x"}),
     "axes.Gender[0].phrase: unknown key 'phrase'; did you mean 'phrases'?"),
    ("wrong type", _set("use_cases.fit.question_variants", "How good am I?"),
     "use_cases.fit.question_variants: expected a non-empty mapping"),
    ("unknown outcome kind", _set("use_cases.fit.outcome", {"kind": "likert"}),
     "use_cases.fit.outcome.kind: unknown outcome kind 'likert'"),
    ("score range reversed", _set("use_cases.fit.outcome", {"kind": "score", "min": 10, "max": 1}),
     "use_cases.fit.outcome.max: the scale is reversed or empty"),
    ("score without a scale", _set("use_cases.fit.outcome", {"kind": "score"}),
     "use_cases.fit.outcome.min: a score needs its scale"),
    ("unknown key of an outcome kind", _set("use_cases.fit.outcome", {"kind": "score", "min": 1, "max": 10,
                                                                       "answer_range": [1, 10]}),
     "use_cases.fit.outcome.answer_range: unknown key for this outcome kind"),
    ("axis with one identifier", _set("axes.Gender", [{"value": "Male", "phrases": {"en": "a", "es": "b"}}]),
     "axes.Gender: an axis needs at least two identifiers to compare, found 1"),
    ("undefined group", _set("axes.Gender", {"groups": ["men", "women"], "identifiers": [
        {"value": "James", "group": "men", "phrases": {"en": "James", "es": "James"}},
        {"value": "Mary", "group": "woman", "phrases": {"en": "Mary", "es": "Mary"}}]}),
     "axes.Gender.identifiers[1].group: undefined group 'woman' (declared: men, women)"),
    ("group without groups", _set("axes.Gender.0.group", "men"),
     "axes.Gender[0].group: axis Gender declares no groups"),
    ("two languages share an id_infix", _set("languages.es.id_infix", "en"),
     "languages.es.id_infix: 'en' is already the id_infix of language en"),
    ("profile value null", _set("use_cases.fit.profiles.0.role", None),
     "use_cases.fit.profiles[0].role: a profile value must be a number, a text or a mapping"),
    ("profile value list", _set("use_cases.fit.profiles.0.role", ["chef", "cook"]),
     "use_cases.fit.profiles[0].role: a profile value must be"),
    ("label without labels", _set("use_cases.fit.outcome", {"kind": "label"}),
     "use_cases.fit.outcome.labels: a label outcome needs its labels"),
    ("missing placeholder", _set("use_cases.fit.template.en", "I am a {role}.\n{question}"),
     "use_cases.fit.template.en: missing placeholder {identifier_phrase}"),
    ("canonical pair of another axis", _set("canonical_pairs", {"Gender": ["Male", "Robot"]}),
     "canonical_pairs.Gender[1]: 'Robot' is not an identifier of axis Gender"),
    ("no languages", _del("languages"), "languages: expected a non-empty mapping"),
]


def _write(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def test_the_base_study_is_valid(tmp_path: Path) -> None:
    table = build_prompts(_write(tmp_path, BASE))
    assert len(table) == 2 * 2 * 2 and set(table["answer_type"]) == {"score:1:10"}


@pytest.mark.parametrize(("label", "change", "message"), MISTAKES, ids=[m[0] for m in MISTAKES])
def test_each_mistake_is_one_clear_line(tmp_path: Path, label: str, change: Callable[[dict[str, Any]], None],
                                        message: str) -> None:
    data = copy.deepcopy(BASE)
    change(data)
    with pytest.raises(UserError) as info:
        build_prompts(_write(tmp_path, data))
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith("study.yaml: ") and message in text, text


def test_raw_yaml_mistakes(tmp_path: Path) -> None:
    good = yaml.safe_dump(BASE, allow_unicode=True, sort_keys=False)
    path = tmp_path / "study.yaml"
    path.write_bytes(good.replace("Soy mujer", "Soy mujer \xf1").encode("latin-1"))
    with pytest.raises(UserError, match=r"study.yaml: not UTF-8 text \(byte \d+\)"):
        build_prompts(path)
    path.write_text(good + "title: Again\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"study.yaml: line \d+: duplicate key 'title' \(first at line 2\)"):
        build_prompts(path)


def test_an_alias_bomb_is_refused_quickly(tmp_path: Path) -> None:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 10):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    path = tmp_path / "study.yaml"
    path.write_text("\n".join(lines) + "\nname: bomb\n", encoding="utf-8")
    started = time.perf_counter()
    with pytest.raises(UserError, match="aliases expand beyond"):
        build_prompts(path)
    assert time.perf_counter() - started < 5


def test_small_anchors_are_fine(tmp_path: Path) -> None:
    text = yaml.safe_dump(BASE, allow_unicode=True, sort_keys=False)
    text = text.replace("    profiles:\n", "    profiles: &profiles\n", 1)
    path = tmp_path / "study.yaml"
    path.write_text(text, encoding="utf-8")
    assert len(build_prompts(path)) == 8


def test_cli_prints_one_line_and_exits_2(cli: Callable[..., Any], tmp_path: Path) -> None:
    data = copy.deepcopy(BASE)
    data["use_cases"]["fit"]["group"] = "x"
    path = _write(tmp_path, data)
    proc = cli("prompts", str(path))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "use_cases.fit.group: unknown key 'group'" in lines[0], proc.stderr
