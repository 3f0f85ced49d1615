"""The docs stay true: every analysis table and every CLI verb is documented."""

from __future__ import annotations

from counterbench.analyses.schema import TABLE_COLUMNS
from counterbench.commands import COMMAND_MODULES
from tests.conftest import REPO


def test_every_analysis_table_is_documented_with_its_columns() -> None:
    text = (REPO / "docs" / "analysis.md").read_text()
    for name, columns in TABLE_COLUMNS.items():
        assert f"### `{name}`" in text, name
        for column in columns:
            assert f"`{column}`" in text, (name, column)


def test_every_cli_verb_appears_in_the_readme() -> None:
    import typer

    from counterbench.commands import register_all

    app = typer.Typer()
    register_all(app)
    readme = (REPO / "README.md").read_text()
    names = [c.name for c in app.registered_commands]
    assert len(names) >= len(COMMAND_MODULES)
    for name in names:
        assert f"counterbench {name}" in readme, name
