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


def test_every_server_family_and_its_default_structured_mode_is_documented() -> None:
    from counterbench.models.structured import FAMILY_MODES, MODES

    docs = (REPO / "docs" / "models.md").read_text()
    readme = (REPO / "README.md").read_text()
    for family, (default, modes) in FAMILY_MODES.items():
        row = next((line for line in docs.splitlines() if line.startswith(f"| `{family}")), None)
        assert row is not None, family
        assert f"| `{default}` |" in row, (family, default)
        assert all(f"`{mode}`" in row for mode in modes if mode not in ("none", default)), (family, row)
        assert f"`{family}`" in readme, family
    assert all(f"`{mode}`" in readme for mode in MODES)
