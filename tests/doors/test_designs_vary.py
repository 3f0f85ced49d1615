"""Designs that cannot vary are refused with one line naming the key, exit 2, nothing written: hiring
prompt texts without their placeholders ({job}, {resume_a}, ...), two identical profiles or two identical
question variants in a study file."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from counterbench.builtin.hiring.data import builtin_path
from tests.conftest import REPO, run_cli_here

RENT = REPO / "examples" / "rent_quote.yaml"


def _one_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    return lines[0]


@pytest.mark.parametrize(("section", "placeholder"), [
    ("compare", "job"), ("compare", "resume_a"), ("compare", "resume_b"), ("score", "resume"), ("score", "job"),
    ("recover", "attribute"), ("recover", "labels"), ("generation", "job"),
])
def test_a_hiring_prompt_without_a_placeholder_is_refused(tmp_path: Path, section: str, placeholder: str) -> None:
    data = yaml.safe_load(builtin_path("prompts.yaml").read_text(encoding="utf-8"))
    data[section]["user"] = data[section]["user"].replace("{" + placeholder + "}", "the text")
    path = tmp_path / "prompts.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    store = tmp_path / "s.db"
    line = _one_line(run_cli_here("audit", "hiring", "--prompts", str(path), "--preset", "quick", "-m", "sim:fair",
                                  "--store", str(store), "--out", str(tmp_path / "out")))
    assert f"{section}.user has no {{{placeholder}}} placeholder" in line, line
    assert not store.exists() and not (tmp_path / "out").exists()


def test_an_unknown_placeholder_or_a_stray_brace_is_refused(tmp_path: Path) -> None:
    data = yaml.safe_load(builtin_path("prompts.yaml").read_text(encoding="utf-8"))
    path = tmp_path / "prompts.yaml"
    for text, fragment in (("{job} {resume} {salary}", "unknown placeholder {salary}"),
                           ("{job} {resume} {", "score.user: Single '{' encountered")):
        data["score"]["user"] = text
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        assert fragment in _one_line(run_cli_here("prompts", "hiring", "--prompts", str(path)))


def _study(tmp_path: Path, edit: str) -> Path:
    data = yaml.safe_load(RENT.read_text(encoding="utf-8"))
    uc = data["use_cases"]["rent_quote"]
    if edit == "profiles":
        uc["profiles"].append({**uc["profiles"][0], "profile_id": "P09"})
    else:
        uc["question_variants"]["en"].append(uc["question_variants"]["en"][0])
        for lang in uc["question_variants"]:
            if lang != "en":
                uc["question_variants"][lang].append(uc["question_variants"][lang][0] + " (2)")
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def test_two_identical_profiles_are_refused(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    line = _one_line(run_cli_here("run", str(_study(tmp_path, "profiles")), "-m", "sim:fair", "--store", str(store)))
    assert "use_cases.rent_quote.profiles[2]: profile 'P09' has the same fields as profile 'P01'" in line, line
    assert not store.exists()


def test_two_identical_question_variants_are_refused(tmp_path: Path) -> None:
    line = _one_line(run_cli_here("prompts", str(_study(tmp_path, "variants"))))
    assert "use_cases.rent_quote.question_variants.en[" in line and "the same text as question variant [0]" in line
