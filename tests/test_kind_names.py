"""No line of the core outside ``outcomes/`` names an outcome kind: it asks the kind (``outcomes/kinds.py``).

The kind names are the registry's (``COUNTERBENCH_PLUGINS=builtin``: the built-in ones); the core is every
layer below the built-in studies, the CLI's verbs and the Inspect tasks (``tests/test_layers.py``). A name
counts where the code holds it as a string (``spec.kind == "choice"``, ``gap_unit("amount")``, a dict keyed
by kind); prose (docstrings, comments) may speak of amounts and labels. A kind's own family of tables
(``families/KIND/``) is keyed by its kind and names it, that kind only (the built-in families register by
entry points, so no other core file lists them).
"""

from __future__ import annotations

import ast
from pathlib import Path

from counterbench.outcomes import KINDS
from tests.test_layers import NAME_NO_STUDY, PACKAGE

#: (file, string) of the core that spell a kind's name but mean something else, and what
NOT_A_KIND: dict[tuple[str, str], str] = {
    ("report/svg.py", "text"): "the SVG <text> element",
    ("models/openai_compat.py", "text"): "a content part's text in the OpenAI protocol",
    ("models/anthropic_backend.py", "text"): "a content block's type and text in the Anthropic protocol",
    ("inspect_ext/importer.py", "text"): "an Inspect content block's text",
    ("inspect_ext/importer.py", "label"): "the run's label in the store's provenance",
    ("studies/options.py", "choice"): "a study option's kind (one of listed values), not an outcome kind",
    ("studies/strict.py", "label"): "the use-case key `label` of a study file",
    ("studies/use_cases.py", "label"): "the use-case key `label` of a study file",
    ("analyses/model_compare.py", "label"): "the model comparison tables' `label` column (a measure's name)",
    ("report/sections_models.py", "label"): "the model comparison tables' `label` column (a measure's name)",
}


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def kind_names_in(path: Path, names: set[str]) -> list[tuple[int, str]]:
    """(line, name) where ``path``'s code holds a kind's name as a string (docstrings left out)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _docstrings(tree)
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
            and id(node) not in skip]


def _core_files() -> list[Path]:
    files = []
    for room in NAME_NO_STUDY:
        if room == "outcomes":
            continue
        target = PACKAGE / room if (PACKAGE / room).is_dir() else PACKAGE / f"{room}.py"
        files += sorted(target.rglob("*.py")) if target.is_dir() else [target]
    return files


def own_kinds(rel: str) -> set[str]:
    """The kinds a core file may name: a family's package its own kind, no other file any."""
    parts = rel.split("/")
    return {parts[1]} if parts[0] == "families" and len(parts) > 2 else set()


def test_the_core_names_no_outcome_kind() -> None:
    names = set(KINDS.names())
    assert {"amount", "label", "choice"} <= names
    hits, used = [], set()
    for path in _core_files():
        rel = path.relative_to(PACKAGE).as_posix()
        for line, name in kind_names_in(path, names - own_kinds(rel)):
            if (rel, name) in NOT_A_KIND:
                used.add((rel, name))
            else:
                hits.append(f"{rel}:{line}: {name!r}")
    assert not hits, "the core names an outcome kind (ask the kind instead, outcomes/kinds.py):\n" + "\n".join(hits)
    assert not set(NOT_A_KIND) - used, f"stale exceptions: {sorted(set(NOT_A_KIND) - used)}"


def test_the_check_can_fail(tmp_path: Path) -> None:
    module = tmp_path / "branch.py"
    module.write_text('"""amount"""\n\ndef f(spec):\n    """choice"""\n    return spec.kind == "choice"\n')
    assert kind_names_in(module, set(KINDS.names())) == [(5, "choice")]


def test_a_family_names_its_own_kind_only() -> None:
    assert own_kinds("families/amount/family.py") == {"amount"}
    assert own_kinds("families/__init__.py") == set()
    assert own_kinds("analyses/study.py") == set()
    assert own_kinds("families/amount/tables.py") < set(KINDS.names())  # "label" there would be a hit
