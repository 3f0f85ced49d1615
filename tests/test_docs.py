"""The docs stay true: every analysis table and every CLI verb is documented."""

from __future__ import annotations

from counterbench.commands import COMMAND_MODULES
from counterbench.families.amount.tables import TABLE_COLUMNS
from tests.conftest import REPO


def test_every_analysis_table_is_documented_with_its_columns() -> None:
    text = (REPO / "docs" / "analysis.md").read_text()
    for name, columns in TABLE_COLUMNS.items():
        assert f"### `{name}`" in text, name
        for column in columns:
            assert f"`{column}`" in text, (name, column)


def test_every_outcome_table_is_documented_with_its_columns() -> None:
    from counterbench.analyses.outcome_tables import OUTCOME_TABLES

    text = (REPO / "docs" / "analysis.md").read_text()
    for name, (columns, _) in OUTCOME_TABLES.items():
        assert f"### `{name}`" in text, name
        for column in columns:
            assert f"`{column}`" in text, (name, column)


def test_every_built_in_registered_table_is_documented_with_its_columns() -> None:
    from counterbench.analyses.table_registry import TABLES

    text = (REPO / "docs" / "analysis.md").read_text()
    for name, entry in TABLES.entries().items():
        if entry.source != "built-in":
            continue
        assert f"### `{name}`" in text, name
        for column in TABLES.get(name).columns:
            assert f"`{column}`" in text, (name, column)


def test_every_outcome_kind_and_design_is_documented() -> None:
    from counterbench.outcomes import kind_names

    studies = (REPO / "docs" / "studies.md").read_text()
    extending = (REPO / "docs" / "extending.md").read_text()
    for kind in kind_names():
        assert f"| `{kind}` |" in studies, kind
    for design in ("Single attribute", "Names grouped into groups", "Crossed attributes"):
        assert design in studies, design
    assert "## A Python study" in extending and "## An outcome kind" in extending and "## A backend" in extending
    for example in ("loan_rate", "approval_crossed", "suitability_score", "names_groups"):
        assert f"examples/{example}.yaml" in studies and (REPO / "examples" / f"{example}.yaml").is_file()


def test_user_docs_cite_no_internal_files() -> None:
    import re

    for path in [REPO / "README.md", REPO / "docs" / "studies.md", REPO / "docs" / "extending.md"]:
        text = path.read_text()
        assert not re.search(r"\.\./shared|papers/\d{3}|spec §", text), path.name


def test_every_cli_verb_appears_in_the_readme() -> None:
    import typer

    from counterbench.commands import register_all

    app = typer.Typer()
    register_all(app)
    readme = (REPO / "README.md").read_text()
    names = [c.name for c in app.registered_commands]
    assert len(names) >= len(COMMAND_MODULES) - len(app.registered_groups)
    for group in app.registered_groups:  # a verb with sub-verbs (counterbench hiring resumes)
        assert group.typer_instance is not None
        group_name = group.name if isinstance(group.name, str) else group.typer_instance.info.name
        names += [f"{group_name} {c.name}" for c in group.typer_instance.registered_commands]
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


def _python_block(doc: str, heading: str, index: int = 0) -> str:
    """The ``index``-th Python code block under ``heading`` of ``doc``."""
    section = doc.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]
    return section.split("```python\n")[1 + index].split("```", 1)[0]


def test_the_extending_guide_says_how_to_add_each_thing_and_its_examples_run() -> None:
    import pandas as pd
    import typer
    from typer.testing import CliRunner

    from counterbench.analyses.table_registry import TABLES, TableInputs
    from counterbench.studies.registry import load_study

    doc = (REPO / "docs" / "extending.md").read_text()
    for heading in ("## A Python study", "## An outcome kind", "## A table", "## A backend", "## A verb"):
        assert heading in doc, heading
    table: dict[str, object] = {}
    exec(_python_block(doc, "## A table"), table)  # the guide's own example
    try:
        spec = TABLES.get("answer_range")
        rows = pd.DataFrame({"model": "m", "use_case": "u", "identifier": ["a", "a", "b"], "y": [1.0, 4.0, 2.0]})
        built = spec.build(TableInputs(rows, load_study("rupeebias"), 0, 0, {})).set_index("identifier")
        assert built.loc["a", "answer_range"] == 3.0 and built.loc["b", "answer_range"] == 0.0
    finally:
        TABLES.unregister("answer_range")
    verb: dict[str, object] = {}
    exec(_python_block(doc, "## A verb"), verb)
    app = typer.Typer()
    verb["register"](app)  # type: ignore[operator]
    done = CliRunner().invoke(app, ["mytool", "materials", "--out", "m.jsonl"])
    assert done.exit_code == 0 and "wrote m.jsonl" in done.output
