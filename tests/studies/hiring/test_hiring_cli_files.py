"""`counterbench audit hiring --jobs/--resumes/--baskets/--prompts`: another country from the command line."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.conftest import REPO

KENYA = REPO / "examples" / "kenya_hiring"


def test_audit_hiring_on_user_files_recovers_the_planted_preference(tmp_path, cli):
    out = tmp_path / "out"
    proc = cli("audit", "hiring", "--jobs", str(KENYA / "jobs.jsonl"), "--resumes", str(KENYA / "resumes.jsonl"),
               "--baskets", str(KENYA / "baskets.yaml"), "--prompts",
               str(REPO / "src" / "counterbench" / "builtin" / "hiring" / "data" / "prompts.yaml"),
               "--model", "sim:examples/sim/kenya_hiring.yaml", "--preset", "quick",
               "--store", str(tmp_path / "k.db"), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    wr = pd.read_csv(out / "analysis" / "hiring_win_rates.csv")
    assert set(wr["group"]) == {f"{e} {g}" for e in ("Kikuyu", "Luo", "Kalenjin") for g in ("Male", "Female")}
    assert set(wr["n_jobs"]) == {3}  # --preset quick picked 3 of the user's jobs by position
    by_ethnicity = wr.groupby(wr["group"].str.split().str[0])["win_rate"].mean()
    assert by_ethnicity.idxmax() == "Luo" and by_ethnicity["Luo"] > 0.75  # planted 0.875, others 0.5


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["prompts", "rupeebias", "--jobs", "JOBS"], "--jobs is an option of the hiring study"),
        (["prompts", "hiring", "--baskets", "nowhere.yaml"], "--baskets nowhere.yaml: no such file"),
        (["prompts", "examples/kenya_hiring.yaml", "--jobs", "JOBS"], "a study file names its own files"),
        (["prompts", "hiring", "--jobs", "JOBS"], "no neutral resume for job 'eleceng_1'"),  # built-in resumes
        (["audit", "hiring", "--resumes", "JOBS", "--model", "sim:hiring-fair"], "unknown field"),
    ],
)
def test_hiring_file_mistakes_are_one_line_and_exit_2(cli, args, message):
    proc = cli(*[str(KENYA / "jobs.jsonl") if a == "JOBS" else a for a in args])
    assert proc.returncode == 2, proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], proc.stderr
