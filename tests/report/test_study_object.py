"""A study object given to the Python API is used as given: its own report sections reach the report
although no registry knows its name (the report never looks the study up again by name)."""

from __future__ import annotations

from pathlib import Path

import counterbench
from counterbench.report.document import Section
from counterbench.studies.registry import STUDIES
from tests.studies.python_studies import MiniIntersectional


class UnregisteredWithSections(MiniIntersectional):
    name = "unregistered_with_sections"

    def report_sections(self, ctx: object) -> list[Section]:
        return [Section("own_section", "A section only this study object draws", "Drawn by the study object.")]


def test_audit_of_an_unregistered_study_object_keeps_its_sections(tmp_path: Path) -> None:
    study = UnregisteredWithSections()
    assert study.name not in STUDIES
    done = counterbench.audit(study, ["sim:fair"], store=tmp_path / "cb.db", out=tmp_path / "out", bootstrap=50)
    html = Path(done.report.html).read_text(encoding="utf-8")
    assert "A section only this study object draws" in html
    assert done.analysis.study is study
