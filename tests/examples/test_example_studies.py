"""The four example studies, each audited end to end by the CLI with its simulated model.

For each: ``counterbench audit examples/NAME.yaml --model sim:examples/sim/NAME.yaml`` writes a report
titled with the study's own title, showing its own languages and axes and no RupeeBias words; the report
loads in headless Chromium without console errors; and the analysis recovers the effect the simulation
file plants, with the right sign and a 95% CI that covers the planted value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import REPO
from tests.report.chromium import CHROMIUM, load, root_tag, with_probe

pytestmark = pytest.mark.slow
RUPEEBIAS_WORDS = re.compile(r"rupeebias|hinglish|\bINR\b|salary|caste|Hindu|Brahmin", re.IGNORECASE)


@dataclass(frozen=True)
class Example:
    name: str
    title: str
    languages: tuple[str, ...]
    axes: tuple[str, ...]
    #: (facet, comparison) whose difference from the reference was planted, and the planted value
    facet: str
    comparison: str
    planted: float
    #: facets whose gaps must all be unmarked (nothing planted there)
    clean_facets: tuple[str, ...]
    #: what parse health says a usable answer holds (the outcome kind's wording)
    answer_words: str


EXAMPLES = [
    Example("loan_rate", "Loan interest rates quoted to applicants", ("English", "Spanish"),
            ("Gender", "Age", "Nationality"), "Gender", "Female", 0.5, ("Age",), "a usable rate"),
    Example("approval_crossed", "Approval decisions with crossed age, gender and race", ("English",),
            ("age", "gender", "race"), "race", "Black", -20.0, (), "one of the allowed labels"),
    Example("suitability_score", "Job suitability scores (1-10)", ("English",), ("Disability", "Religion"),
            "Disability", "Wheelchair user", -1.0, ("Religion",), "a score on the declared scale"),
    Example("names_groups", "Interview scores by first name", ("English",), ("Name",), "Name (groups)", "women",
            -5.0, (), "a score on the declared scale"),
]


@pytest.fixture(scope="module")
def audits(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from tests.conftest import run_cli

    root = tmp_path_factory.mktemp("examples")
    out: dict[str, Path] = {}
    for ex in EXAMPLES:
        folder = root / ex.name
        # relative paths from the repository: the model's name (and so its seeded answers) is the same anywhere
        proc = run_cli("audit", f"examples/{ex.name}.yaml", "--model", f"sim:examples/sim/{ex.name}.yaml",
                       "--store", str(root / "all.db"), "--out", str(folder), "--bootstrap", "1000", "--no-progress",
                       cwd=REPO)
        assert proc.returncode == 0, proc.stderr
        out[ex.name] = folder
    return out


@pytest.mark.parametrize("ex", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_report_speaks_the_study_s_language(audits: dict[str, Path], ex: Example) -> None:
    html = (audits[ex.name] / "report.html").read_text(encoding="utf-8")
    md = (audits[ex.name] / "report.md").read_text(encoding="utf-8")
    assert f"<h1>{ex.title} audit report</h1>" in html.replace("&#39;", "'")
    assert md.startswith(f"# {ex.title} audit report")
    for text in (html, md):
        assert not RUPEEBIAS_WORDS.search(text), RUPEEBIAS_WORDS.search(text)
    for language in ex.languages:
        assert language in html
    for axis in ex.axes:
        assert axis in html
    assert "Matched gaps" in html and "Leaderboard" not in html
    assert "plants:" in html  # the banner says what the simulation planted
    assert f"How many answers contained {ex.answer_words}." in md and "usable number" not in md


@pytest.mark.parametrize("ex", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_planted_effect_is_recovered(audits: dict[str, Path], ex: Example) -> None:
    gaps = pd.read_csv(audits[ex.name] / "analysis" / "outcome_gaps.csv")
    rows = gaps[(gaps["facet"] == ex.facet) & (gaps["comparison"] == ex.comparison)]
    assert len(rows) == len(ex.languages)
    for row in rows.to_dict("records"):
        assert (row["difference"] > 0) == (ex.planted > 0), row
        assert row["ci_low"] <= ex.planted <= row["ci_high"], row
        assert bool(row["significant"]), row
    for facet in ex.clean_facets:
        assert not gaps.loc[gaps["facet"] == facet, "significant"].astype(bool).any()


def test_crossed_study_regression_agrees_in_sign(audits: dict[str, Path]) -> None:
    reg = pd.read_csv(audits["approval_crossed"] / "analysis" / "crossed_regression.csv")
    black = reg[(reg["attribute"] == "race") & (reg["level"] == "Black")].iloc[0]
    assert black["estimate"] < 0 and black["ci_high"] < 0 and black["p_value"] < 0.01
    assert not reg["significant"].astype(bool).any()  # descriptive: the marks are the gap table's (families.py)
    assert set(reg["attribute"]) == {"age", "gender", "race"}


def test_spanish_is_compared_with_english(audits: dict[str, Path]) -> None:
    lang = pd.read_csv(audits["loan_rate"] / "analysis" / "language_gaps.csv")
    assert set(lang["language"]) == {"en"} and set(lang["other_language"]) == {"es"}
    assert len(lang) == 4  # Female, 65, Immigrant, Refugee


@pytest.mark.skipif(CHROMIUM is None, reason="headless chromium is not installed")
@pytest.mark.parametrize("ex", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_report_opens_in_chromium(audits: dict[str, Path], ex: Example, tmp_path: Path) -> None:
    page = tmp_path / "probed.html"
    page.write_text(with_probe((audits[ex.name] / "report.html").read_text(encoding="utf-8")), encoding="utf-8")
    result = load(page, tmp_path)
    root = root_tag(result.dom)
    assert 'data-probe="ready"' in root and "data-probe-errors" not in root, root
    assert result.console == []
    assert ex.title in result.dom.replace("&#39;", "'") and "Matched gaps" in result.dom
