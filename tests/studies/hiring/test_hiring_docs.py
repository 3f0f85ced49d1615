"""docs/hiring.md stays true: every table, preset, data file and simulated model is documented."""

from __future__ import annotations

from counterbench.builtin.hiring.analysis import TABLES
from counterbench.builtin.hiring.data import builtin_path
from counterbench.builtin.hiring.plan import filter_presets
from tests.conftest import REPO


def test_docs_cover_tables_presets_files_and_sims():
    text = (REPO / "docs" / "hiring.md").read_text(encoding="utf-8")
    for name in TABLES:
        assert f"`{name}`" in text, name
    for name in filter_presets():
        assert f"`{name}`" in text, name
    for name in ("jobs.jsonl", "resumes.jsonl", "baskets.yaml", "prompts.yaml", "presets.yaml", "lint_terms.yaml"):
        assert builtin_path(name).is_file() and f"`{name}`" in text, name
    assert "sim:hiring-biased" in text and "sim:hiring-fair" in text
    assert "../shared" not in text and "papers/" not in text  # papers cited by title only
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "docs/hiring.md" in readme and "counterbench audit hiring" in readme
