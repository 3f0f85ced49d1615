"""The STEM study's options (``counterbench audit stem --convention paper ...``): one definition for the
command line, a study file and Python; mistakes are one line and exit 2 naming the valid values."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from counterbench.builtin.stem.study import StemStudy
from counterbench.errors import UserError
from counterbench.studies.registry import load_study
from tests.conftest import run_cli, run_cli_here

pytestmark = pytest.mark.slow  # scheduled first (tests/conftest.py)


def test_audit_takes_the_options_after_the_study(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = run_cli("audit", "stem", "--convention", "paper", "--truncated", "drop", "--max-tokens-ranking", "64",
                   "--max-tokens-generation=300", "--model", "sim:stem", "--preset", "quick",
                   "--store", str(tmp_path / "s.db"), "-o", str(out), "--bootstrap", "0", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = json.loads((out / "analysis" / "summary.json").read_text())
    assert (summary["stem_convention"], summary["truncated_explanations"]) == ("paper", "drop")
    assert "max_abs_z" in pd.read_csv(out / "analysis" / "stem_bias.csv").columns  # the paper's Table 4 column
    html = (out / "report.html").read_text()
    assert "Convention: the paper&#39;s (--convention paper)" in html
    # report --store takes the options too (the store holds the answers, not how they were analysed) ...
    for named in (["stem"], []):  # the study named, or the store's only study
        again = run_cli("report", *named, "--store", str(tmp_path / "s.db"), "--convention", "paper",
                        "-o", str(tmp_path / "r.html"), cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        assert "Convention: the paper&#39;s" in (tmp_path / "r.html").read_text()
        (tmp_path / "r.html").unlink()
    # ... and an analysed folder refuses them
    analysed = run_cli("report", "--analysis", str(out / "analysis"), "--shap", "tree", cwd=tmp_path)
    assert analysed.returncode == 2 and "--shap applies when analysing a store" in analysed.stderr
    prompts = tmp_path / "p.parquet"
    listed = run_cli("prompts", "stem", "--preset", "quick", "--max-tokens-ranking", "64", "--max-tokens-generation",
                     "300", "-o", str(prompts), cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    table = pd.read_parquet(prompts)
    limits = table.groupby("use_case")["requested_max_tokens"].unique().map(list).to_dict()
    assert limits == {"ranking": [64], "generation": [300]}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--convention", "mine"], "--convention must be one of counterbench, paper"),
        (["--shap=forest"], "--shap must be one of linear, tree"),
        (["--max-tokens-ranking", "0"], "--max-tokens-ranking must be a whole number ≥ 1"),
        (["--jeebench", "nowhere.json"], "--jeebench nowhere.json: no such file"),
        (["--conventoin", "paper"], "no such option: --conventoin (study stem takes --convention, --truncated"),
        (["--truncated"], "--truncated needs a value"),
    ],
)
def test_a_bad_option_is_one_line_and_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    done = run_cli_here("prompts", "stem", *args, cwd=tmp_path)
    assert done.returncode == 2, done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], done.stderr


def test_another_study_says_whose_option_it_is(tmp_path: Path) -> None:
    done = run_cli_here("prompts", "rupeebias", "--convention", "paper", cwd=tmp_path)
    assert done.returncode == 2
    assert "--convention is an option of the stem study" in done.stderr


def test_studies_lists_the_options(tmp_path: Path) -> None:
    done = run_cli("studies", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    for line in ("--convention {counterbench,paper}", "--truncated {score,drop}", "--shap {linear,tree}",
                 "--max-tokens-ranking N", "(default 16)", "--jobs FILE"):
        assert line in done.stdout


def test_a_study_file_takes_the_same_names(tmp_path: Path) -> None:
    (tmp_path / "math.jsonl").write_text("")
    path = tmp_path / "paper_stem.yaml"
    path.write_text("study: stem\nconvention: paper\ntruncated: drop\nmax-tokens-ranking: 2048\n"
                    "readability_math: placeholder\n")
    study = load_study(path)
    assert isinstance(study, StemStudy)
    assert (study.convention(), study.truncated(), study.readability_math()) == ("paper", "drop", "placeholder")
    assert (study.design.ranking_tokens, study.design.generation_tokens) == (2048, 512)
    bad = tmp_path / "bad.yaml"
    bad.write_text("study: stem\nconvention: mine\n")
    with pytest.raises(UserError, match=r"^bad\.yaml: convention must be one of counterbench, paper"):
        load_study(bad)
    bad.write_text("study: stem\ncolour: red\n")
    with pytest.raises(UserError, match=r"^bad\.yaml: no such option: colour \(study stem takes convention, "):
        load_study(bad)


def test_python_takes_the_same_options() -> None:
    study = StemStudy(convention="paper", shap="linear", max_tokens_ranking=64)
    assert (study.convention(), study.shap_method(), study.design.ranking_tokens) == ("paper", "linear", 64)
    assert (StemStudy().convention(), StemStudy().truncated()) == ("counterbench", "score")  # the defaults
    with pytest.raises(UserError, match=r"^math nowhere: no such file or folder$"):
        StemStudy(math="nowhere")
