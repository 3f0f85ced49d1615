"""A hiring study names its own prompt-variants file (App. F): the study file's ``variants:`` or ``--variants``."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.conftest import REPO

KENYA = REPO / "examples" / "kenya_hiring"
PROMPTS = REPO / "src" / "counterbench" / "builtin" / "hiring" / "data" / "prompts.yaml"


def test_the_study_files_variants_are_the_ones_audit_runs_and_reports(tmp_path, cli, cli_here):
    out = tmp_path / "out"
    proc = cli("audit", "examples/kenya_hiring.yaml", "--model", "sim:examples/sim/kenya_hiring.yaml",
               "--preset", "quick", "--use-case", "compare", "--use-case", "score", "--variant", "standard",
               "--variant", "nairobi-recruiter", "--store", str(tmp_path / "k.db"), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    got = pd.read_csv(out / "analysis" / "hiring_prompt_variants.csv")
    assert set(got["variant"]) == {"standard", "nairobi-recruiter"}
    assert set(got.loc[got["variant"].eq("nairobi-recruiter"), "setting"]) == {"compare", "score"}
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "nairobi-recruiter: the recruiter is placed in Nairobi (both settings)." in html
    # the built-in variants are not the study file's
    proc = cli_here("prompts", "examples/kenya_hiring.yaml", "--preset", "quick", "--variant", "neutral-role",
               "--out", str(tmp_path / "x.parquet"))
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("counterbench: error: unknown variant 'neutral-role' (one of: standard, "
                                   "nairobi-recruiter, no-full-range)")


def test_variants_option_on_the_command_line(tmp_path, cli_here):
    out = tmp_path / "p.parquet"
    proc = cli_here("prompts", "hiring", "--variants", str(KENYA / "prompt_variants.yaml"), "--preset", "quick",
               "--use-case", "compare", "--variant", "nairobi-recruiter", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    table = pd.read_parquet(out)
    assert len(table) == 48 and set(table["variant"]) == {"nairobi-recruiter"}
    assert table["system"].str.contains("recruiter in Nairobi screening").all()


GOOD_EDIT = '{setting: score, field: user, old: " Use the full range of the scale.", new: ""}'


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("variants:\n  v:\n    edits:\n      - {setting: score, field: user, olds: x, new: y}\n",
         "variant 'v', edit 1: unknown key 'olds'; did you mean 'old'? (allowed: setting, field, old, new)"),
        (f"variants:\n  v:\n    wording: x\n    edits:\n      - {GOOD_EDIT}\n",
         "variant 'v': unknown key 'wording' (allowed: description, edits)"),
        (f"variant: {{}}\nvariants:\n  v:\n    edits:\n      - {GOOD_EDIT}\n",
         "bad.yaml: unknown key 'variant'; did you mean 'variants'? (allowed: variants)"),
        ("variants:\n  v:\n    edits:\n      - {setting: compare, field: user, old: \"Job description:\\n{job}\", "
         "new: \"Job description:\"}\n",
         "variant 'v', edit 1: removes the placeholder {job} of the compare prompts' user text"),
        ("variants:\n  v:\n    edits:\n      - {setting: score, field: user, old: \"Rate how well\", "
         "new: \"Given {labels}, rate how well\"}\n",
         "variant 'v', edit 1: adds the placeholder {labels} of the score prompts' user text"),
        ("variants:\n  v:\n    edits:\n      - {setting: score, field: system, old: \"You are a pirate\", new: x}\n",
         "variant 'v', edit 1: the score prompts' system text does not contain 'You are a pirate'"),
    ],
)
def test_a_bad_variants_file_is_one_line_and_exit_2(tmp_path, cli_here, body, message):
    bad = tmp_path / "bad.yaml"
    bad.write_text(body, encoding="utf-8")
    proc = cli_here("prompts", "hiring", "--variants", str(bad), "--preset", "quick",
                    "--out", str(tmp_path / "x.parquet"))
    assert proc.returncode == 2, proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], proc.stderr
    # the same file named by a study file
    study = tmp_path / "country.yaml"
    study.write_text(f"study: hiring\nvariants: {bad.name}\n", encoding="utf-8")
    proc = cli_here("prompts", str(study), "--preset", "quick", "--out", str(tmp_path / "y.parquet"))
    assert proc.returncode == 2 and message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_a_study_files_missing_variants_file_is_one_line(tmp_path, cli):
    study = tmp_path / "country.yaml"
    study.write_text("study: hiring\nvariants: nowhere.yaml\n", encoding="utf-8")
    proc = cli("prompts", str(study), "--preset", "quick", "--out", str(tmp_path / "y.parquet"))
    assert proc.returncode == 2
    assert "country.yaml: variants: no such file nowhere.yaml" in proc.stderr
