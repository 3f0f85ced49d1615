"""``counterbench report`` and ``counterbench audit`` as a user runs them (subprocesses)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.report.fixtures import make_summary, make_tables, write_analysis_dir

pytestmark = pytest.mark.slow  # scheduled first (tests/conftest.py)

AUDIT = ("audit", "rupeebias", "--model", "sim:biased", "--model", "sim:fair", "--preset", "quick",
         "--bootstrap", "50", "--no-progress")


def last_line(stdout: str) -> str:
    return stdout.strip().splitlines()[-1]


def test_report_from_an_analysis_folder(tmp_path: Path) -> None:
    folder = write_analysis_dir(tmp_path / "analysis", make_tables(), make_summary())
    done = run_cli("report", "--analysis", str(folder), "--out", str(tmp_path / "out" / "r.html"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    html = tmp_path / "out" / "r.html"
    assert last_line(done.stdout) == str(html.resolve())
    assert (tmp_path / "out" / "r.md").is_file()
    assert "Leaderboard" in html.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give --analysis DIR"),
        (("--analysis", "nowhere"), "does not exist"),
        (("--store", "missing.db"), "does not exist"),
        (("--analysis", ".", "--bootstrap", "5"), "--bootstrap applies when analysing a store"),
        (("--analysis", ".", "--out", "report.pdf"), None),
    ],
)
def test_report_mistakes_are_one_line_and_exit_2(tmp_path: Path, args: tuple[str, ...], message: str | None) -> None:
    if "." in args:
        write_analysis_dir(tmp_path, make_tables(["sim:fair"]), make_summary(["sim:fair"]))
    done = run_cli("report", *args, cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("counterbench: error:"), done.stderr
    if message:
        assert message in lines[0]


def test_audit_runs_analyses_reports_and_resumes(tmp_path: Path) -> None:
    first = run_cli(*AUDIT, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    out = tmp_path / "counterbench-report"
    html = out / "report.html"
    assert last_line(first.stdout) == str(html.resolve())
    assert (out / "report.md").is_file()
    for name in ("leaderboard", "cpg", "mog", "parse_health"):
        assert (out / "analysis" / f"{name}.csv").is_file() and (out / "analysis" / f"{name}.parquet").is_file()
    assert (out / "analysis" / "summary.json").is_file()
    page = html.read_text(encoding="utf-8")
    assert 'id="banner-simulated"' in page and "Sample of raw responses" in page
    assert page.count("Not available for this run.") == 2  # one language, no fairness (every question variant)
    assert re.search(r"sim:biased \[simulated\]: 540 answered now", first.stdout)

    again = run_cli(*AUDIT, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "0 answered now (0 requests" in again.stdout and "540 already stored" in again.stdout
    assert last_line(again.stdout) == str(html.resolve())

    # the same store, analysed on the fly by `report --store`
    direct = run_cli("report", "--store", "counterbench.db", "--bootstrap", "20", "--model", "sim:biased",
                     "--out", "direct.html", cwd=tmp_path)
    assert direct.returncode == 0, direct.stderr
    text = (tmp_path / "direct.html").read_text(encoding="utf-8")
    assert "sim:biased" in text and "sim:fair" not in text.split('id="leaderboard"')[1].split("</section>")[0]


def test_audit_needs_a_model(tmp_path: Path) -> None:
    done = run_cli("audit", "rupeebias", "--preset", "quick", cwd=tmp_path)
    assert done.returncode == 2 and "--model" in done.stderr
    assert not (tmp_path / "counterbench.db").exists()


def test_audit_of_a_study_file_compares_the_pairs_it_declares(tmp_path: Path) -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "rent_quote.yaml"
    done = run_cli("audit", str(example), "--model", "sim:biased", "--bootstrap", "20", "--no-progress", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    import pandas as pd

    cpg = pd.read_csv(tmp_path / "counterbench-report" / "analysis" / "cpg.csv")
    assert set(zip(cpg["axis"], cpg["reference"], cpg["comparison"], strict=True)) == {
        ("Religion", "Hindu", "Muslim"), ("Origin", "Local", "Migrant from Bihar")}
    assert set(cpg["language"]) == {"en", "hinglish"} and (cpg["n_slots"] > 0).all()
