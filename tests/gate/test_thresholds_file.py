"""Typed thresholds: a boolean, a text or a negative limit is refused when the file is read, before any run."""

from __future__ import annotations

from pathlib import Path

import pytest

from counterbench.errors import UserError
from counterbench.gate import Thresholds, parse_fail_on
from tests.conftest import run_cli_here


@pytest.mark.parametrize(("text", "message"), [
    ("max_mean_delta: true\n", "got true"),
    ("max_mean_delta: yes\n", "got true"),
    ("max_pair_gap: '5'\n", "got the text '5' (write it unquoted)"),
    ("max_pair_gap: five\n", "got the text 'five'"),
    ("max_mean_delta: -1\n", "≥ 0, got -1"),
    ("max_mean_delta: .nan\n", "finite number"),
    ("max_mean_delta: [5]\n", "must be a number or off"),
    ("significant_w: true\n", "significant_w must be one of"),
])
def test_a_mistyped_threshold_is_refused_at_load(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "gate.yaml"
    path.write_text(text)
    with pytest.raises(UserError, match="gate threshold") as info:
        parse_fail_on([str(path)])
    assert message in str(info.value)


@pytest.mark.parametrize("word", ["off", "false", "null", "~", "'off'", "no"])
def test_off_false_and_null_switch_a_rule_off(tmp_path: Path, word: str) -> None:
    path = tmp_path / "gate.yaml"
    path.write_text(f"max_mean_delta: {word}\nmax_pair_gap: {word}\nsignificant_w: {word}\n")
    assert parse_fail_on([str(path)]) == Thresholds(max_mean_delta=None, max_pair_gap=None, significant_w="off")


def test_numbers_in_files_and_flags_still_work(tmp_path: Path) -> None:
    path = tmp_path / "gate.yaml"
    path.write_text("max_mean_delta: 7\nmax_pair_gap: 2.5\nsignificant_w: axis\n")
    expected = Thresholds(max_mean_delta=3.0, max_pair_gap=2.5, significant_w="axis")
    assert parse_fail_on([str(path), "mean-delta=3"]) == expected
    off = Thresholds(max_mean_delta=None, max_pair_gap=None, significant_w="model")
    assert parse_fail_on(["mean-delta=off", "pair-gap=false"]) == off


def test_a_latin1_thresholds_file_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "gate.yaml"
    path.write_bytes("# Schwelle für Δ\nmax_mean_delta: 5\n".encode("latin-1", errors="replace"))
    done = run_cli_here("check", "--analysis", str(tmp_path), "--fail-on", str(path))
    assert done.returncode == 2 and "not UTF-8" in done.stderr and done.stderr.count("\n") == 1, done.stderr


@pytest.mark.parametrize("spec", ["mean-delta=-1", "THRESHOLDS"])
def test_audit_refuses_a_bad_threshold_before_it_runs(tmp_path: Path, spec: str) -> None:
    bad = tmp_path / "gate.yaml"
    bad.write_text("max_mean_delta: true\n")
    store = tmp_path / "a.db"
    done = run_cli_here("audit", "rupeebias", "--model", "sim:biased", "--preset", "quick", "--store", str(store),
                        "--out", str(tmp_path / "out"), "--no-progress",
                        "--fail-on", str(bad) if spec == "THRESHOLDS" else spec)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "gate threshold" in done.stderr, done.stderr
    assert not store.exists() and not (tmp_path / "out").exists()  # nothing ran
