"""``counterbench analyze``: files written, user mistakes as one-line errors, and the Python API."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from counterbench.analyses.outcome_tables import OUTCOME_TABLES
from counterbench.families.amount.tables import TABLE_COLUMNS, TableLayout, table_columns
from counterbench.pipeline import analyze
from counterbench.prompts import prompts
from counterbench.run import run_prompts

pytestmark = pytest.mark.slow  # scheduled first (tests/conftest.py)


@pytest.fixture(scope="module")
def small_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    table = prompts("rupeebias", language=["en"], use_case=["salary_estimation"], axis=["Gender", "Urban/Rural"],
                    profile=["P01", "P02", "P03", "P04", "P05"], question_variant=[1, 2])
    store = tmp_path_factory.mktemp("cli") / "small.db"
    assert run_prompts(table, ["sim:biased", "sim:fair"], store=store, handle_signals=False).complete
    return store


#: the built-in study's languages and its two largest axes name the per-language and share columns
RUPEEBIAS_LAYOUT = TableLayout(("en", "hinglish"), ("Caste", "Region"))


def test_analyze_writes_every_table(cli: Callable[..., Any], small_store: Path, tmp_path: Path) -> None:
    out = tmp_path / "analysis"
    proc = cli("analyze", "rupeebias", "--store", str(small_store), "--out", str(out), "--bootstrap", "200",
               "--bootstrap-seed", "4")
    assert proc.returncode == 0, proc.stderr
    assert "sim:biased" in proc.stdout and "simulated model" in proc.stdout
    for name in TABLE_COLUMNS:
        csv, parquet = pd.read_csv(out / f"{name}.csv") if (out / f"{name}.csv").stat().st_size > 1 else None, \
            pd.read_parquet(out / f"{name}.parquet")
        columns = table_columns(name, RUPEEBIAS_LAYOUT)
        assert list(parquet.columns[: len(columns)]) == list(columns)
        if csv is not None:
            assert len(csv) == len(parquet)
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["profile"] == "default" and summary["bootstrap"]["replicates"] == 200
    assert summary["bootstrap"]["seed"] == 4 and summary["simulated"] == {"sim:biased": True, "sim:fair": True}
    assert set(summary["unsupported"]) >= {"language_moderation", "fairness_ablation"}
    assert summary["n_responses"] == 200 and summary["models"]["sim:fair"]["n_responses"] == 100
    assert {"ci", "pair_ci", "v10_ci", "cpg", "cpg_overall", "mog"} <= set(summary["ci_methods"])
    board = pd.read_parquet(out / "leaderboard.parquet")
    api_board = analyze(small_store, bootstrap=200, seed=4)["leaderboard"]
    pd.testing.assert_frame_equal(board, api_board.astype(board.dtypes.to_dict()), check_exact=False)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--store", "{missing}"], "does not exist"),
        (["--model", "sim:nope"], "no responses of model sim:nope"),
        (["--bootstrap", "lots"], "--bootstrap must be a whole number"),
        (["--bootstrap", "-1"], "--bootstrap must be at least 0"),
        (["--tau", "-5"], "--tau must be a finite number"),
        (["--parse-profile", "v2"], "unknown analysis profile"),
    ],
)
def test_user_mistakes_are_one_line_exit_2(cli: Callable[..., Any], small_store: Path, tmp_path: Path,
                                           args: list[str], message: str) -> None:
    base = {"--store": str(small_store), "--out": str(tmp_path / "o")}
    for flag, value in zip(args[::2], args[1::2], strict=True):
        base[flag] = value.format(missing=tmp_path / "missing.db")
    proc = cli("analyze", "rupeebias", *[x for kv in base.items() for x in kv])
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and message in proc.stderr and "Traceback" not in proc.stderr


def test_unknown_study_is_a_user_error(cli: Callable[..., Any], small_store: Path, tmp_path: Path) -> None:
    proc = cli("analyze", "no_such_study", "--store", str(small_store), "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and "unknown study 'no_such_study'" in proc.stderr


def test_model_filter_and_determinism(small_store: Path) -> None:
    one = analyze(small_store, models=["sim:fair"], bootstrap=300, seed=1)
    assert one["leaderboard"]["model"].tolist() == ["sim:fair"]
    assert list(one.summary["models"]) == ["sim:fair"]
    again = analyze(small_store, models=["sim:fair"], bootstrap=300, seed=1)
    for name in TABLE_COLUMNS:
        pd.testing.assert_frame_equal(one[name], again[name])
    other = analyze(small_store, models=["sim:fair"], bootstrap=300, seed=2)
    a, b = one["axis_mean_delta"], other["axis_mean_delta"]
    assert np.allclose(a["mean_delta"], b["mean_delta"]) and not np.allclose(a["ci_low"], b["ci_low"])


def test_result_write_and_json_safety(small_store: Path, tmp_path: Path) -> None:
    result = analyze(small_store, bootstrap=0)
    written = result.write(tmp_path / "w")
    # amounts get the generic tables too, and every analysis the answer checks, impact ratios, the group gaps
    # over names (empty here: no groups) and the model comparison (model_differences, model_ranks)
    assert len(written) == 2 * (len(TABLE_COLUMNS) + len(OUTCOME_TABLES) + 5) + 1
    assert (tmp_path / "w" / "answer_checks.csv").is_file()
    text = (tmp_path / "w" / "summary.json").read_text(encoding="utf-8")
    assert "NaN" not in text and json.loads(text)["bootstrap"]["replicates"] == 0
    assert np.isnan(result["leaderboard"]["ci_low"]).all()


def test_findings_lead_in_the_same_words_everywhere(cli: Callable[..., Any], small_store: Path,
                                                    tmp_path: Path) -> None:
    """The planted gap is found and said in words: summary.json, the end of the terminal output and the
    top of report.md carry the same sentences; the fair model's sentence says there is nothing to report."""
    out = tmp_path / "analysis"
    proc = cli("analyze", "rupeebias", "--store", str(small_store), "--out", str(out), "--bootstrap", "300")
    assert proc.returncode == 0, proc.stderr
    findings = json.loads((out / "summary.json").read_text(encoding="utf-8"))["findings"]
    biased = [f for f in findings if f.startswith("sim:biased offers")]
    assert biased and all("less than" in f and "95% CI" in f and "matched prompts" in f for f in biased)
    assert any(f.startswith("sim:biased offers Female") and "less than Male" in f for f in biased)
    assert "sim:fair: no gap beyond noise between the canonical pairs" in " ".join(findings)
    tail = proc.stdout.strip().splitlines()[-len(findings):]
    assert [line.removeprefix("- ") for line in tail] == findings
    report = tmp_path / "report.html"
    assert cli("report", "--analysis", str(out), "--out", str(report)).returncode == 0
    md = report.with_suffix(".md").read_text(encoding="utf-8")
    top = md[: md.index("## ")]
    for sentence in findings:
        assert f"- {sentence}" in top


def test_power_command(cli: Callable[..., Any], small_store: Path, tmp_path: Path) -> None:
    proc = cli("power", "rupeebias", "--preset", "quick", "--out", str(tmp_path / "power.csv"))
    assert proc.returncode == 0, proc.stderr
    assert "Averaged over use cases, a gap of " in proc.stdout and "of the pair's mean" in proc.stdout
    assert "too few" in proc.stdout
    table = pd.read_csv(tmp_path / "power.csv")
    pooled = table[table["use_case"] == "all use cases"]
    assert len(pooled) == 6 and pooled["testable"].all() and (pooled["mde_less"] < 10).all()
    measured = cli("power", "rupeebias", "--use-case", "salary_estimation", "--language", "en", "--store",
                   str(small_store))
    assert measured.returncode == 0, measured.stderr
    assert "measured, sim:fair" in measured.stdout and "measured, sim:biased" in measured.stdout
    bad = cli("power", "rupeebias", "--noise-sd", "lots")
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0 and "--noise-sd" in bad.stderr
