"""The Markdown report carries its tables' key rows: a section whose tables are all folded away (too long
for the page) shows a few rows of the first — marked rows first — and says where the rest are, instead of
only naming a CSV file."""

from __future__ import annotations

import re
from pathlib import Path

import counterbench
from counterbench.report.document import Section
from counterbench.report.markdown import MD_KEY_ROWS, md_section
from counterbench.report.tables import TableView


def _view(n: int, marked: set[int], source: str = "gaps.csv") -> TableView:
    rows = [[f"id{i}", f"{i}.0", "*" if i in marked else " "] for i in range(n)]
    return TableView(columns=["Identity", "Difference", "Mark (BH within model)"], numeric=[False, True, False],
                     rows=rows, collapsed=True, total_rows=n, source=source)


def test_a_folded_only_section_shows_marked_rows_first_then_the_first() -> None:
    section = Section("gaps", "Matched gaps", "Blurb.", tables=[_view(40, {17, 30}), _view(50, set(), "more.csv")])
    text = "\n".join(md_section(section))
    shown = re.findall(r"^\| (id\d+) \|", text, re.M)
    assert shown == ["id0", "id1", "id2", "id17", "id30"] and len(shown) == MD_KEY_ROWS
    assert "_Key rows: 5 of 40 (marked rows first, then the first rows); all rows in `gaps.csv`._" in text
    assert "50 rows in `more.csv`" in text  # the second folded table keeps its pointer


def test_a_section_with_a_shown_table_adds_no_key_rows() -> None:
    shown = TableView(columns=["Identity"], numeric=[False], rows=[["x"]], total_rows=1)
    text = "\n".join(md_section(Section("s", "S", "Blurb.", tables=[shown, _view(40, {3})])))
    assert "id3" not in text and "40 rows in `gaps.csv`" in text


def test_the_report_md_of_a_run_has_numbers_in_every_gap_section(tmp_path: Path) -> None:
    store = tmp_path / "cb.db"
    table = counterbench.prompts("rupeebias", language="en", preset="quick")
    counterbench.run_prompts(table, ["sim:biased"], store=store)
    analysis = counterbench.analyze(store, bootstrap=200)
    counterbench.write_report(analysis, tmp_path / "report.html")
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    sections = {part.split("\n", 1)[0]: part for part in md.split("\n## ")[1:]}
    for title in ("Matched gaps", "Outcome by identity", "Identifier deviation"):
        body = sections[title]
        assert re.search(r"^\| sim:biased \|", body, re.M) or re.search(r"^\| [^|]+ \| .*\d", body, re.M), title
        assert "_Key rows: " in body, title
