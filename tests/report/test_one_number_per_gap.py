"""One number per gap, and a direction.

A planted amount study (the rent example with six profiles, so every pair rests on 12 matched prompts; a
simulated landlord quoting Muslim tenants 25% more) is audited end to end by the CLI. For the planted pair
the matched-gaps table, the canonical pair gap, the report, the gate's lines, the finding and the answer
viewer all state the same number — Δ% of the pair's mean, read "first vs second" — and, the study declaring
``favourable: lower`` (a rent), the finding names the tenant the gap is unfavourable to.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from counterbench.analyses.direction import disadvantaged
from counterbench.analyses.findings import findings
from counterbench.analyses.gap_forms import pair_mean_of
from counterbench.gate import Thresholds, check
from counterbench.outcomes import encode
from counterbench.outcomes.base import OutcomeSpec
from counterbench.viewer.app import answer_cells
from tests.conftest import REPO, run_cli_here
from tests.viewer.conftest import running_viewer
from tests.viewer.test_viewer_http import get

MODEL_FILE = "rent_sim.yaml"
PROFILES = [{"profile_id": f"P{i:02d}", "flat": flat, "city": city} for i, (flat, city) in enumerate(
    [("2BHK flat", "Pune"), ("1BHK flat", "Bengaluru"), ("3BHK flat", "Hyderabad"), ("studio flat", "Mumbai"),
     ("2BHK flat", "Chennai"), ("1BHK flat", "Kolkata")], start=1)]
LANGUAGES = {"en": "English", "hinglish": "Hinglish"}


@pytest.fixture(scope="module")
def audit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("one_number")
    data = yaml.safe_load((REPO / "examples" / "rent_quote.yaml").read_text(encoding="utf-8"))
    data["use_cases"]["rent_quote"]["profiles"] = PROFILES
    assert data["use_cases"]["rent_quote"]["favourable"] == "lower"
    (root / "rent.yaml").write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    sim = yaml.safe_load((REPO / "examples" / "sim" / "rent_quote.yaml").read_text(encoding="utf-8"))
    (root / MODEL_FILE).write_text(yaml.safe_dump(sim, sort_keys=False), encoding="utf-8")
    done = run_cli_here("audit", "rent.yaml", "--model", f"sim:{MODEL_FILE}", "--store", "a.db", "--out", "out",
                        "--bootstrap", "400", "--no-progress", cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    return root


def _tables(root: Path) -> dict[str, pd.DataFrame]:
    return {p.stem: pd.read_parquet(p) for p in (root / "out" / "analysis").glob("*.parquet")}


def _planted(tables: dict[str, pd.DataFrame], language: str) -> tuple[float, float]:
    """(outcome_gaps' Muslim vs Hindu, cpg's Hindu vs Muslim) of one language."""
    gaps, cpg = tables["outcome_gaps"], tables["cpg"]
    gap = gaps[(gaps["language"] == language) & (gaps["comparison"] == "Muslim") & (gaps["reference"] == "Hindu")]
    pair = cpg[(cpg["language"] == language) & (cpg["comparison"] == "Muslim") & (cpg["reference"] == "Hindu")]
    assert len(gap) == 1 and len(pair) == 1 and bool(gap["significant"].iloc[0]) and bool(pair["significant"].iloc[0])
    return float(gap["difference"].iloc[0]), float(pair["gap"].iloc[0])


@pytest.mark.parametrize("language", list(LANGUAGES))
def test_tables_report_and_gate_state_one_number(audit: Path, language: str) -> None:
    tables = _tables(audit)
    forward, backward = _planted(tables, language)
    # the planted 25% more is 22.2% of the pair's mean; Muslim vs Hindu is Hindu vs Muslim turned
    assert forward > 10 and backward == pytest.approx(-forward, abs=1e-9)
    row = tables["outcome_gaps"].query("language == @language and comparison == 'Muslim'").iloc[0]
    assert row["difference_unit"] == "% of the pair's mean"
    assert forward == pytest.approx(pair_mean_of(row["comparison_mean"], row["reference_mean"]))
    assert row["relative_pct"] == pytest.approx(100 * (row["comparison_mean"] / row["reference_mean"] - 1))
    md = (audit / "out" / "report.md").read_text(encoding="utf-8")
    name = LANGUAGES[language]
    assert re.search(rf"\| Rent quote \| {name} \| Religion \| Muslim \| Hindu \| [0-9.]+ \| [0-9.]+ \| "
                     rf"{re.escape(f'{forward:+.2f}')} \|", md)
    assert re.search(rf"\| {name} \| Rent quote \| Religion \| Hindu vs Muslim \| {re.escape(f'{backward:+.2f}')} \|",
                     md)
    verdict = check(tables, Thresholds(max_pair_gap=5, significant_w="off"))
    lines = [d for o in verdict.outcomes for d in o.details]
    assert f"{language} · rent_quote · Religion: Muslim vs Hindu (reference) {forward:+.1f}%" in lines, lines
    assert f"{language} · rent_quote · Religion: Hindu vs Muslim {backward:+.1f}%" in lines, lines


def test_the_finding_quotes_the_same_number_and_names_the_disadvantaged_tenant(audit: Path) -> None:
    tables = _tables(audit)
    summary = json.loads((audit / "out" / "analysis" / "summary.json").read_text(encoding="utf-8"))
    largest = next(f for f in summary["findings"] if f.startswith("Largest in a single use case: "))
    language = max(LANGUAGES, key=lambda lang: abs(_planted(tables, lang)[0]))
    forward, _ = _planted(tables, language)
    assert (f"offers Hindu less than Muslim in {LANGUAGES[language]}, Rent quote: a gap of {abs(forward):.1f}% "
            "of the pair's mean") in largest, largest
    assert largest.endswith("; lower is favourable, so the gap is unfavourable to Muslim."), largest
    md = (audit / "out" / "report.md").read_text(encoding="utf-8")
    assert largest in md and "% less than" not in md
    # the same tables read with the other direction, or none, name the other tenant, or nobody
    higher = findings(tables, list(summary["models"]), LANGUAGES, {"rent_quote": "higher"})
    assert all(line.endswith("unfavourable to Hindu.") for line in higher if "Hindu less than Muslim" in line)
    assert not any("favourable" in line for line in findings(tables, list(summary["models"]), LANGUAGES))


def test_the_viewer_reads_the_same_number(audit: Path) -> None:
    tables = _tables(audit)
    with running_viewer(audit / "a.db") as url:
        for language in LANGUAGES:
            status, _, text = get(f"{url}/matrix.json?use_case=rent_quote&language={language}&variant=standard")
            assert status == 200
            (model,) = json.loads(text)["models"]
            means = {r["identifier"]: r["cells"][model]["mean"] for r in json.loads(text)["rows"]}
            forward, _ = _planted(tables, language)
            assert pair_mean_of(means["Muslim"], means["Hindu"]) == pytest.approx(forward, abs=1e-6)
            status, _, html = get(f"{url}/slot?model={model}&use_case=rent_quote&language={language}"
                                  "&axis=Religion&profile_id=P01&question_variant=1&variant=standard")
            assert status == 200 and "Δ% of the pair&#39;s mean" in html


def test_a_direction_names_who_is_disadvantaged() -> None:
    assert disadvantaged("Hindu", "Muslim", -20.0, "lower") == "Muslim"  # Muslim quoted more rent
    assert disadvantaged("Hindu", "Muslim", -20.0, "higher") == "Hindu"  # Hindu offered the lower salary
    assert disadvantaged("Hindu", "Muslim", -20.0, None) is None


def test_an_unknown_direction_is_one_line_and_exit_2(tmp_path: Path) -> None:
    data = yaml.safe_load((REPO / "examples" / "rent_quote.yaml").read_text(encoding="utf-8"))
    data["use_cases"]["rent_quote"]["favourable"] = "less"
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    done = run_cli_here("prompts", str(tmp_path / "s.yaml"))
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "use_cases.rent_quote.favourable: expected higher or lower" in done.stderr


def test_the_viewer_shows_a_label_as_its_label() -> None:
    yes_no = encode(OutcomeSpec("label", labels=("yes", "no"), positive="yes"))
    no_yes = encode(OutcomeSpec("label", labels=("no", "yes"), positive="yes"))  # "no" stored as 0, measured 0
    assert answer_cells(0.0, "yes", yes_no) == ("yes", "") and answer_cells(1.0, "no", yes_no) == ("no", "")
    assert answer_cells(0.0, "no", no_yes) == ("no", "")
    assert answer_cells(29932.0, "INR", "inr") == ("29,932", "INR")


def test_every_example_study_has_a_simulated_model() -> None:
    studies = sorted(p.stem for p in (REPO / "examples").glob("*.yaml"))
    assert "rent_quote" in studies
    assert [s for s in studies if not (REPO / "examples" / "sim" / f"{s}.yaml").is_file()] == []
