"""Inspect AI both ways: the quick preset as an Inspect task (found through the ``inspect_ai`` entry
point) against the fake OpenAI server via Inspect's ``openai-api`` provider, the log imported with
``counterbench import --inspect-log``, and every analysis table equal to a direct counterbench run of
the same prompts on the same server (same answers -> same numbers)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from counterbench.testing.fake_openai import ServerProcess
from tests.conftest import REPO, run_cli

pytestmark = pytest.mark.slow  # scheduled first (tests/conftest.py)

if importlib.util.find_spec("inspect_ai") is None:  # found, not imported: collection stays light
    pytest.skip("needs inspect-ai: pip install 'counterbench[inspect]'", allow_module_level=True)

ENTRY_POINT = "[inspect_ai]\ncounterbench = counterbench.inspect_ext._registry\n"
#: the quick preset's salary prompts (108; Inspect spends ~0.1 s of CPU per sample, so the whole preset
#: takes a minute on 2 cores); COUNTERBENCH_INSPECT_FULL=1 runs all 540
USE_CASES = [] if os.environ.get("COUNTERBENCH_INSPECT_FULL") else ["salary_estimation"]
N_SAMPLES = 540 if not USE_CASES else 108


def entry_point_dir(root: Path) -> Path:
    """A dist-info declaring counterbench's ``inspect_ai`` entry point, as ``pip install`` writes it from
    pyproject.toml (so the test also runs from a source tree whose install predates the entry point)."""
    info = root / "counterbench_inspect_entry-0.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: counterbench-inspect-entry\nVersion: 0.0\n")
    (info / "entry_points.txt").write_text(ENTRY_POINT)
    declared = (REPO / "pyproject.toml").read_text()
    assert '[project.entry-points.inspect_ai]\ncounterbench = "counterbench.inspect_ext._registry"' in declared
    return root


@pytest.fixture(scope="module")
def roundtrip(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    work = tmp_path_factory.mktemp("inspect")
    from importlib.metadata import entry_points

    # the installed counterbench declares the entry point (pyproject.toml); an install that predates it
    # gets it from a dist-info folder on PYTHONPATH (never both: Inspect finds no task on a duplicate)
    installed = any(ep.name == "counterbench" for ep in entry_points(group="inspect_ai"))
    # with the editable install, src/ must not be put first on the path: its counterbench.egg-info would
    # hide the install's metadata, and Inspect would no longer name the tasks counterbench/...
    extra = [] if installed else [str(REPO / "src"), str(entry_point_dir(work / "eps"))]
    with ServerProcess("fake_openai") as server:
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.update(PYTHONPATH=os.pathsep.join([*extra, env.get("PYTHONPATH", "")]),
                   FAKE_API_KEY="not-a-key", FAKE_BASE_URL=server.base_url, INSPECT_LOG_DIR=str(work / "logs"))
        done = subprocess.run(
            [sys.executable, "-m", "inspect_ai", "eval", "counterbench/rupeebias", "-T", "preset=quick",
             *(["-T", "use_case=" + ",".join(USE_CASES)] if USE_CASES else []),
             "--model", "openai-api/fake/fake-model", "--display", "plain", "--max-connections", "32",
             "--log-dir", str(work / "logs")],
            capture_output=True, text=True, env=env, timeout=900, cwd=work)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        direct = run_cli("run", "rupeebias", "--preset", "quick", *(f"--use-case={u}" for u in USE_CASES), "--model",
                         f"fake=openai-compatible:{server.base_url}:fake-model", "--store", str(work / "direct.db"),
                         "--no-progress")
        assert direct.returncode == 0, direct.stderr
    imported = run_cli("import", "--inspect-log", str(work / "logs"), "--store", str(work / "inspect.db"),
                       "--label", "fake")
    assert imported.returncode == 0, imported.stderr
    assert f"stored {N_SAMPLES} new responses" in imported.stdout
    for name in ("direct", "inspect"):
        done = run_cli("analyze", "rupeebias", "--store", str(work / f"{name}.db"), "--out", str(work / name),
                       "--bootstrap", "100")
        assert done.returncode == 0, done.stderr
    return {"work": work, "logs": work / "logs", "direct": work / "direct", "inspect": work / "inspect"}


def test_same_answers_give_the_same_analysis_tables(roundtrip: dict[str, Path]) -> None:
    names = sorted(p.name for p in roundtrip["direct"].glob("*.parquet"))
    assert len(names) >= 15
    compared = 0
    for name in names:
        direct, via_inspect = pd.read_parquet(roundtrip["direct"] / name), pd.read_parquet(roundtrip["inspect"] / name)
        pd.testing.assert_frame_equal(direct, via_inspect, obj=name)
        compared += len(direct) > 0
    assert compared >= 8  # the non-empty tables (leaderboard, gaps, W, ...) all agree
    board = pd.read_parquet(roundtrip["inspect"] / "leaderboard.parquet")
    assert board["overall_mean_delta"].iloc[0] > 0


def test_samples_carry_the_design_and_the_parser_scores(roundtrip: dict[str, Path]) -> None:
    from inspect_ai.log import read_eval_log

    from counterbench.prompts import PromptFilters, build_prompts

    (path,) = list(roundtrip["logs"].glob("*.eval"))
    log = read_eval_log(str(path))
    table = build_prompts("rupeebias", PromptFilters(preset="quick", use_case=USE_CASES or None)).set_index("prompt_id")
    assert log.eval.task_registry_name == "counterbench/rupeebias" and len(log.samples) == len(table) == N_SAMPLES
    for sample in log.samples[:50]:
        row = table.loc[sample.id]
        expected = {c for c in table.columns if c not in ("system", "user") and pd.notna(row[c])}
        assert expected <= set(sample.metadata), expected - set(sample.metadata)
        assert sample.metadata["identifier"] == row["identifier"]
        score = sample.scores["counterbench_parse"]
        assert score.value == (1.0 if score.metadata["status"] == "ok" else 0.0)
        assert float(score.answer.split()[0]) == pytest.approx(score.metadata["value"])


def test_a_foreign_log_is_one_line_error(tmp_path: Path) -> None:
    junk = tmp_path / "junk.eval"
    junk.write_text("not a zip")
    done = run_cli("import", "--inspect-log", str(junk), "--store", str(tmp_path / "x.db"))
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "cannot read Inspect log" in done.stderr
    both = run_cli("import", str(junk), "--inspect-log", str(junk), "--store", str(tmp_path / "x.db"))
    assert both.returncode == 2 and "not both" in both.stderr


def test_the_import_counts_every_prompt_token(roundtrip: dict[str, Path]) -> None:
    """The fake server reports the system prompt as cached (``prompt_tokens_details.cached_tokens``), which
    Inspect leaves out of ``input_tokens``; the import adds it back, so both stores hold the same count."""
    import sqlite3

    def tokens(name: str) -> dict[str, int]:
        with sqlite3.connect(roundtrip["work"] / f"{name}.db") as db:
            return dict(db.execute("SELECT prompt_id, input_tokens FROM responses").fetchall())

    direct, imported = tokens("direct"), tokens("inspect")
    assert len(direct) == N_SAMPLES and imported == direct
