"""Every YAML file a user gives is read by the one strict reader (``counterbench.yaml_files``): an alias
bomb, a non-UTF-8 file or a deep nesting is one line and exit 2 for a study file, a simulation file, a
thresholds file (``check --fail-on``) and the hiring study's ``--baskets``/``--variants``/``--prompts``; a
``--jobs`` JSONL line nested too deep is one line too. Nothing is left behind."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO, run_cli_here

BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8))
DEEP = "a: " + "[" * 150 + "]" * 150 + "\n"
NAMES = REPO / "examples" / "names_groups.yaml"


def _one_line(done: subprocess.CompletedProcess[str], *fragments: str) -> str:
    code, err = done.returncode, done.stderr
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1, err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def _file(tmp_path: Path, text: str | bytes, name: str = "f.yaml") -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def _doors(tmp_path: Path, path: Path) -> dict[str, list[str]]:
    store = str(tmp_path / "s.db")
    return {
        "study": ["prompts", str(path)],
        "sim": ["run", str(NAMES), "-m", f"sim:{path}", "--store", store],
        "thresholds": ["check", "--analysis", str(tmp_path), "--fail-on", str(path)],
        "baskets": ["prompts", "hiring", "--baskets", str(path)],
        "variants": ["prompts", "hiring", "--variants", str(path)],
        "prompts": ["prompts", "hiring", "--prompts", str(path)],
    }


DOORS = ("study", "sim", "thresholds", "baskets", "variants", "prompts")


@pytest.mark.parametrize("door", DOORS)
def test_an_alias_bomb_is_one_line_through_every_door(tmp_path: Path, door: str) -> None:
    path = _file(tmp_path, BOMB)
    _one_line(run_cli_here(*_doors(tmp_path, path)[door]), "aliases expand beyond 100,000 nodes")
    assert not (tmp_path / "s.db").exists()


@pytest.mark.parametrize("door", DOORS)
def test_latin1_and_deep_nesting_are_one_line_through_every_door(tmp_path: Path, door: str) -> None:
    path = _file(tmp_path, "# Schwelle für Δ\nname: x\n".encode("latin-1", errors="replace"))
    _one_line(run_cli_here(*_doors(tmp_path, path)[door]), "not UTF-8 text")
    path = _file(tmp_path, DEEP)
    _one_line(run_cli_here(*_doors(tmp_path, path)[door]), "nested deeper than 100 levels")
    assert not (tmp_path / "s.db").exists()


@pytest.mark.parametrize("door", ("sim", "thresholds", "baskets", "variants", "prompts"))
def test_a_duplicate_key_is_one_line(tmp_path: Path, door: str) -> None:
    path = _file(tmp_path, "noise_sd: 0.1\nnoise_sd: 0.2\n")
    _one_line(run_cli_here(*_doors(tmp_path, path)[door]), "line 2: duplicate key 'noise_sd'")


def test_a_jobs_line_nested_too_deep_is_one_line(tmp_path: Path) -> None:
    path = _file(tmp_path, '{"title": "x", "deep": ' + "[" * 500 + "]" * 500 + "}\n", "jobs.jsonl")
    _one_line(run_cli_here("prompts", "hiring", "--jobs", str(path)), "jobs.jsonl line 1", "nested deeper than 64")


EQUIVALENT = (
    "a: 1\nb: [1, 2.5, {c: d}]\nc: null\nd: 'text: with colon'\n",
    "a: &x [1, 2]\nb: *x\nc: {<<: {k: v}, m: n}\n",
    "- yes\n- No\n- 1e3\n- 2026-12-04\n- ~\n- '0x1F'\n- \"नमस्ते\"\n",
    "key: |\n  line one\n  line two\nother: >\n  folded\n  text\n",
    "",
)
REFUSED = (BOMB, DEEP, "a: 1\nb: 2\na: 3\n", "a: [1, 2\n", "a: {<<: {k: v}, m: n, m: o}\n")


def _python_strict(text: str) -> object:
    from counterbench.yaml_files import StrictLoader, load_strict

    return load_strict(text, "f.yaml", loader_class=StrictLoader)


@pytest.mark.parametrize("text", EQUIVALENT)
def test_the_c_reader_reads_what_the_python_reader_reads(text: str) -> None:
    """libyaml's C parser (the reader used when PyYAML has it) and the pure-Python strict loader give the
    same values; so a 2,000,000-prompt study file loads about 3.5× faster (benchmarks/expansion_speed.py)."""
    import yaml

    from counterbench.yaml_files import FastStrictLoader, StrictLoader, load_strict

    assert yaml.__with_libyaml__ and FastStrictLoader is not StrictLoader
    assert load_strict(text, "f.yaml") == _python_strict(text)


@pytest.mark.parametrize("text", REFUSED)
def test_the_c_reader_refuses_what_the_python_reader_refuses(text: str) -> None:
    import yaml

    from counterbench.errors import UserError
    from counterbench.yaml_files import load_strict

    errors: list[str] = []
    for read in (lambda: load_strict(text, "f.yaml"), lambda: _python_strict(text)):
        with pytest.raises((UserError, yaml.YAMLError)) as caught:
            read()
        errors.append(type(caught.value).__name__ + (str(caught.value) if isinstance(caught.value, UserError) else ""))
    assert errors[0] == errors[1]
