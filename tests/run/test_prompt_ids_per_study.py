"""Prompt ids are unique per study in a store: two study files with a use case of the same name share one
store under one model label, both runs are stored, and each study is analysed with its own answers."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from counterbench.run.store import open_store
from tests.conftest import REPO
from tests.run.conftest import cli

SIM = """description: plants a gap in study loan_b only
noise_sd: 0.02
outcomes:
  rate: {default: 9.5}
effects:
  - match: {study: loan_b, identifier: Female}
    add: 3.0
"""


def _study(tmp_path: Path, name: str, loan: str) -> Path:
    text = (REPO / "examples" / "loan_rate.yaml").read_text(encoding="utf-8")
    text = text.replace("name: loan_rate", f"name: {name}").replace("a personal loan", f"a {loan} loan")
    path = tmp_path / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _gaps(out: Path) -> pd.DataFrame:
    gaps = pd.read_csv(out / "analysis" / "outcome_gaps.csv")
    return gaps[(gaps["facet"] == "Gender") & (gaps["comparison"] == "Female")]


def test_two_studies_with_one_use_case_name_share_a_store_under_one_label(tmp_path: Path) -> None:
    a, b = _study(tmp_path, "loan_a", "personal"), _study(tmp_path, "loan_b", "car")
    (tmp_path / "sim.yaml").write_text(SIM, encoding="utf-8")
    common = ("--model", "bank=sim:sim.yaml", "--store", "shared.db", "--language", "en", "--bootstrap", "200")
    first = cli("audit", str(a), *common, "-o", "out_a", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    second = cli("audit", str(b), *common, "-o", "out_b", cwd=tmp_path)
    assert second.returncode == 0, second.stderr  # was: "prompt(s) whose text has changed since"
    with open_store(tmp_path / "shared.db", create=False) as store:
        per_study = dict(store.query("SELECT p.study, COUNT(*) FROM responses r JOIN prompts p ON "
                                     "p.prompt_id = r.prompt_id AND p.prompt_hash = r.prompt_hash GROUP BY p.study"))
        ids = dict(store.query("SELECT study, MIN(prompt_id) FROM prompts GROUP BY study"))
    assert per_study["loan_a"] == per_study["loan_b"] > 0
    assert ids["loan_a"].startswith("loan_rate_en_") and ids["loan_b"].startswith("loan_b:loan_rate_en_")
    # each audit's report reads its own study's answers: the gap planted in loan_b only is found there only
    assert bool(_gaps(tmp_path / "out_b")["significant"].all())
    assert not bool(_gaps(tmp_path / "out_a")["significant"].any())
    # rerunning either study resumes (nothing sent again), and analyse --store reads each study apart
    for path, out in ((a, "out_a"), (b, "out_b")):
        again = cli("audit", str(path), *common, "-o", out, cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        analysed = cli("analyze", str(path), "--store", "shared.db", "-o", f"{out}_an", "--bootstrap", "200",
                       cwd=tmp_path)
        assert analysed.returncode == 0, analysed.stderr
        stored = pd.read_csv(tmp_path / f"{out}_an" / "outcome_gaps.csv")
        assert set(stored["use_case"]) == {"loan_rate"}
    with open_store(tmp_path / "shared.db", create=False) as store:
        assert store.query("SELECT COUNT(*) FROM responses")[0][0] == per_study["loan_a"] * 2
    planted = pd.read_csv(tmp_path / "out_b_an" / "outcome_gaps.csv")
    assert bool(planted[planted["comparison"] == "Female"]["significant"].all())
    assert (planted["n_slots"] == _gaps(tmp_path / "out_b")["n_slots"].iloc[0]).all()
