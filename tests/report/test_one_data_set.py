"""One data set per model: every table and chart of a report counts the same answers of a model per use case.

Two OpenAI-compatible servers on 127.0.0.1 answer one study with an amount use case (4 names × 6 profiles ×
2 questions) and a yes/no use case (4 names × 6 profiles): an honest one, and one that answers about 20% of
its salaries a thousand times too large (outside the plausibility bounds). The answers go through a real
SQLite store, are analysed from the store, and the report is written; the test then reads the report's HTML —
its tables and the titles of its chart marks — and checks every count against the store itself: the answers
each table uses per model × use case, the matched pairs, the answers left out and where that is said (once).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from html.parser import HTMLParser
from itertools import combinations

import pandas as pd
import pytest

import counterbench
from counterbench.run.results import load_results
from counterbench.testing.fake_openai import FakeOpenAIServer, FaultConfig, run_in_thread

NAMES = ["Arjun", "Rohan", "Karthik", "Venkat"]
PROFILES = [("P01", "data analyst", 4, 900000), ("P02", "civil engineer", 7, 1400000),
            ("P03", "nurse", 2, 500000), ("P04", "accountant", 9, 1600000),
            ("P05", "teacher", 5, 700000), ("P06", "designer", 3, 800000)]
BASE = {role: amount for _, role, _, amount in PROFILES}
LABELS = {"salary_offer": "Salary offer", "approval": "Approval"}


def _study_yaml() -> str:
    profiles = [f"      - {{profile_id: {p}, role: {r}, years: {y}}}" for p, r, y, _ in PROFILES]
    lines = ["name: one_data_set", "title: Offers and interviews by candidate name",
             "languages:", "  en: {name: English, id_infix: en}", "axes:", "  Name:",
             *(f"    - {{value: {n}, phrases: {{en: {n}}}}}" for n in NAMES),
             "canonical_pairs:", "  Name: [Arjun, Venkat]",
             "use_cases:", "  salary_offer:", "    outcome: {kind: amount, answer_type: inr_annual}", "    template:",
             '      en: "I am hiring {identifier_phrase} as a {role} with {years} years of experience.\\n{question}"',
             "    question_variants:", "      en:", '        - "What annual salary in INR should I offer?"',
             '        - "What yearly CTC in INR is fair to offer?"', "    profiles:", *profiles,
             "  approval:", '    outcome: {kind: label, labels: ["yes", "no"]}', "    template:",
             '      en: "{identifier_phrase} applies as a {role} with {years} years of experience.\\n{question}"',
             "    question_variants:", "      en:", '        - "Should we invite them to an interview?"',
             "    profiles:", *profiles]
    return "\n".join(lines) + "\n"


def _noise(text: str) -> float:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF


def honest(system: str, user: str) -> str:
    if "exactly one of" in system:
        return "### yes" if _noise(user) < 0.6 else "### no"
    role = re.search(r"as a (.+?) with", user).group(1)  # type: ignore[union-attr]
    return f"### {round(BASE[role] * (1 + 0.06 * _noise(user) - 0.03))} INR"


def partly_out_of_range(system: str, user: str) -> str:
    text = honest(system, user)
    return text.replace(" INR", "000 INR") if "INR" in text and _noise(user + "oor") < 0.3 else text


class _Report(HTMLParser):
    """The report's tables (section id → [header, rows]) and its chart marks' titles (section id → titles)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: dict[str, list[tuple[list[str], list[list[str]]]]] = {}
        self.titles: dict[str, list[str]] = {}
        self.row_labels: dict[str, list[str]] = {}
        self.section = ""
        self.cell: list[str] | None = None
        self.row: list[str] = []
        self.in_svg = False
        self.svg_tag = ""
        self.text: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "section":
            self.section = found.get("id") or ""
        elif tag == "svg":
            self.in_svg = True
        elif tag == "table":
            self.tables.setdefault(self.section, []).append(([], []))
        elif tag == "tr":
            self.row = []
        elif tag in ("td", "th"):
            self.cell = []
        elif self.in_svg and tag in ("rect", "text", "circle"):
            self.svg_tag = f"{tag}:{found.get('text-anchor', '')}"
        elif self.in_svg and tag == "title":
            self.text = []

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)
        if self.text is not None:
            self.text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self.cell is not None:
            self.row.append("".join(self.cell).strip())
            self.cell = None
        elif tag == "tr" and self.section in self.tables:
            header, rows = self.tables[self.section][-1]
            if not header:
                header.extend(self.row)
            else:
                rows.append(self.row)
        elif tag == "svg":
            self.in_svg = False
        elif tag == "title" and self.text is not None:
            title = "".join(self.text)
            self.titles.setdefault(self.section, []).append(title)
            if self.svg_tag == "text:end":  # a bar chart's row label (right-aligned before the plot)
                self.row_labels.setdefault(self.section, []).append(title)
            self.text = None


def _frame(report: _Report, section: str, header_has: str) -> pd.DataFrame:
    """The section's table whose header has ``header_has``, all its rows."""
    for header, rows in report.tables[section]:
        if header_has in header:
            return pd.DataFrame(rows, columns=header)
    raise AssertionError(f"no table with {header_has!r} in section {section}")


def _count(text: str) -> int:
    return int(text.replace(",", ""))


@pytest.fixture(scope="module")
def audit(tmp_path_factory: pytest.TempPathFactory) -> tuple[_Report, str, pd.DataFrame, dict[str, str]]:
    tmp = tmp_path_factory.mktemp("one_data_set")
    study = tmp / "one_data_set.yaml"
    study.write_text(_study_yaml(), encoding="utf-8")
    table = counterbench.prompts(str(study))
    store = tmp / "store.db"
    models: dict[str, str] = {}
    for name, reply in (("honest", honest), ("oor", partly_out_of_range)):
        with run_in_thread(FakeOpenAIServer(FaultConfig(reply=reply))) as server:
            models[name] = f"openai-compatible:{server.base_url}:{name}"
            assert counterbench.run_prompts(table, [models[name]], store=str(store), handle_signals=False).complete
    result = counterbench.analyze(store, str(study), bootstrap=100, seed=3)
    files = counterbench.write_report(result, tmp / "report" / "report.html")
    page = (tmp / "report" / "report.html").read_text(encoding="utf-8")
    report = _Report()
    report.feed(page)
    assert files.markdown is not None
    markdown = files.markdown.read_text(encoding="utf-8")
    return report, page + markdown, load_results(store), models


def _truth(stored: pd.DataFrame) -> pd.DataFrame:
    """Per model × use case from the store: responses, usable answers (ok, within the bounds), out of range."""
    ok = stored["status"].eq("ok")
    oor = ok & stored["out_of_range"].fillna(False).astype(bool)
    frame = stored.assign(usable=ok & ~oor, oor=oor)
    return frame.groupby(["model", "use_case"]).agg(responses=("status", "size"), usable=("usable", "sum"),
                                                    oor=("oor", "sum"))


def _matched_pairs(stored: pd.DataFrame, model: str) -> int:
    """Matched pairs of the amount use case from the store: two usable names in one slot."""
    usable = stored[(stored["model"] == model) & (stored["use_case"] == "salary_offer") & stored["status"].eq("ok")
                    & ~stored["out_of_range"].fillna(False).astype(bool)]
    sizes = usable.groupby(["profile_id", "question_variant"]).size()
    return int(sum(len(list(combinations(range(n), 2))) for n in sizes))


def test_the_out_of_range_model_is_in_the_store_as_planned(audit: tuple[_Report, str, pd.DataFrame,
                                                                        dict[str, str]]) -> None:
    _, _, stored, models = audit
    truth = _truth(stored)
    assert 5 <= truth.loc[(models["oor"], "salary_offer"), "oor"] <= 20
    assert truth["oor"].sum() == truth.loc[(models["oor"], "salary_offer"), "oor"]  # nowhere else


def test_every_table_of_a_model_counts_the_same_answers_per_use_case(
        audit: tuple[_Report, str, pd.DataFrame, dict[str, str]]) -> None:
    report, _, stored, models = audit
    truth = _truth(stored)
    levels = _frame(report, "outcome_levels", "Answers")
    impact = _frame(report, "table-impact_ratios", "Unusable")
    health = _frame(report, "parse-health", "Out of range")
    for model in models.values():
        for use_case, label in LABELS.items():
            want = truth.loc[(model, use_case)]
            mine = levels[(levels["Model"] == model) & (levels["Use case"] == label)]
            assert mine["Answers"].map(_count).sum() == want["usable"], (model, use_case)
            rows = impact[(impact["Model"] == model) & (impact["Use case"] == use_case)]
            assert rows["N"].map(_count).sum() == want["usable"], (model, use_case)
            assert (rows["N"].map(_count) + rows["Unusable"].map(_count)).sum() == want["responses"]
            line = health[(health["Model"] == model) & (health["Use case"] == label)].iloc[0]
            assert _count(line["Responses"]) == want["responses"] and _count(line["Used"]) == want["usable"]
            shown = float(line["Out of range"].rstrip("%"))
            assert shown == pytest.approx(100.0 * want["oor"] / want["responses"], abs=0.05)
    board = _frame(report, "leaderboard", "Pairs").set_index("Model")
    table = _frame(report, "methods", "Values used").set_index("Model")
    for model in models.values():
        pairs = _matched_pairs(stored, model)
        assert _count(board.loc[model, "Pairs"]) == pairs == _count(table.loc[model, "Matched pairs"])
        assert _count(table.loc[model, "Responses"]) == truth.loc[model, "responses"].sum()
        assert _count(table.loc[model, "Values used"]) == truth.loc[model, "usable"].sum()


def test_every_chart_row_names_its_model_and_draws_the_tables_values(
        audit: tuple[_Report, str, pd.DataFrame, dict[str, str]]) -> None:
    report, _, _, models = audit
    gaps = _frame(report, "outcome_gaps", "Difference")
    labels = report.row_labels["outcome_gaps"]
    assert len(labels) == len(gaps)  # one chart row per table row
    assert all(any(label.startswith(f"{m} · ") for m in models.values()) for label in labels)
    drawn = Counter(t.split(" · ", 1)[0] for t in report.titles["outcome_gaps"] if "(95% CI" in t)
    assert drawn == Counter(gaps["Model"])
    for row in gaps.to_dict("records"):
        title = f"{row['Model']} · Name: {row['Identity']} − {row['Reference']} · {row['Model']}: {row['Difference']}"
        assert any(t.startswith(title + " (95% CI") for t in report.titles["outcome_gaps"]), title
    board = _frame(report, "leaderboard", "Overall Mean Δ%")
    for row in board.to_dict("records"):
        value = float(row["Overall Mean Δ%"])
        bars = [t for t in report.titles["leaderboard"] if t.startswith(f"{row['Model']} · Overall: ")]
        shown = float(bars[0].removeprefix(f"{row['Model']} · Overall: ").split(" ")[0])
        assert len(bars) == 1 and shown == pytest.approx(value, abs=0.051)
    for section, titles in report.titles.items():  # a value of a thousand-fold answer would show here
        for title in titles:
            for model in models.values():
                title = title.replace(model, "")
            for number in re.findall(r"[-+]?\d[\d,]*\.?\d*", title):
                value = float(number.replace(",", ""))
                assert not math.isfinite(value) or abs(value) < 1e4 or "INR" in title, (section, title)


def test_the_rule_is_stated_once(audit: tuple[_Report, str, pd.DataFrame, dict[str, str]]) -> None:
    _, text, stored, models = audit
    n = int(_truth(stored)["oor"].sum())
    sentence = (f"{n} answers outside the plausibility bounds ({models['oor']}: {n} of 72) are left out of every "
                "table, chart, headline and gate of this analysis")
    assert text.count(sentence) == 2  # once in the HTML page, once in the Markdown report
    assert text.count("outside the plausibility bounds") == 2
    assert "past the scale" not in text  # no value was left outside a chart's scale
