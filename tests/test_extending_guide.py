"""``docs/extending.md`` stays true: every code name in it exists, every member and hook it must list is
listed, and each step it shows runs (its code blocks are executed here, in ``tests/test_docs.py`` — a
table, a verb — and in ``tests/outcomes/test_register_kind.py`` — the outcome kind)."""

from __future__ import annotations

import importlib
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

import counterbench
from counterbench.outcomes.kinds import OPTIONAL_MEMBERS, OutcomeKind
from counterbench.studies.hooks import HOOKS, StudyHooks
from tests.conftest import REPO
from tests.test_docs import _python_block

GUIDE = REPO / "docs" / "extending.md"
DOTTED = re.compile(r"(counterbench(?:\.\w+)+)(?:\(.*\))?")


def _spans(doc: str) -> list[str]:
    return re.findall(r"`([^`\n]+)`", doc)


def _resolve(name: str) -> Any:
    """The module, class, function or attribute a dotted name names (``AttributeError`` when none)."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for part in parts[i:]:
            found = getattr(found, part)
        return found
    raise AttributeError(name)


def _entry_point_groups() -> set[str]:
    from counterbench.analyses.table_families import FAMILIES
    from counterbench.analyses.table_registry import TABLES
    from counterbench.commands import VERBS
    from counterbench.models.registry import BACKENDS
    from counterbench.models.sim_profile import SIM_PRESETS
    from counterbench.outcomes import KINDS
    from counterbench.parse.profiles import PROFILES
    from counterbench.prompts import RELEASE_READERS
    from counterbench.run.importers import RUN_IMPORTERS
    from counterbench.studies.registry import DEFAULTS, STUDIES

    registries = (TABLES, FAMILIES, VERBS, BACKENDS, SIM_PRESETS, KINDS, PROFILES, RELEASE_READERS, RUN_IMPORTERS,
                  DEFAULTS, STUDIES)
    return {str(r.group) for r in registries}


def _missing_names(doc: str, groups: set[str]) -> list[str]:
    missing = []
    for span in _spans(doc):
        found = DOTTED.fullmatch(span)
        if found is None or found.group(1) in groups:
            continue
        try:
            _resolve(found.group(1))
        except AttributeError:
            missing.append(span)
    return missing


def test_every_code_name_in_the_guide_exists() -> None:
    groups = _entry_point_groups()
    assert not _missing_names(GUIDE.read_text(encoding="utf-8"), groups)
    assert _missing_names("`counterbench.studies.files.STUDY_FILES` and `counterbench.tables`", groups) == [
        "counterbench.studies.files.STUDY_FILES"]  # the check can fail


def test_every_file_the_guide_names_exists() -> None:
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    tracked += [str(p.relative_to(REPO)) for p in (REPO / "tests").rglob("*.py")]  # new, not yet committed
    for span in _spans(GUIDE.read_text(encoding="utf-8")):
        if not re.fullmatch(r"[\w.-]+(/[\w.-]+)+\.(py|md|yaml|toml)", span) or re.search(r"/[A-Z]+/", span):
            continue  # not a path, or a pattern (builtin/STUDY/verbs.py)
        assert any(f == span or f.endswith("/" + span) for f in tracked), span


def test_the_guide_lists_every_member_of_a_kind_and_every_study_hook() -> None:
    doc = GUIDE.read_text(encoding="utf-8")
    kind = doc.split("\n## An outcome kind\n", 1)[1].split("\n## ", 1)[0]
    required = [n for n in OutcomeKind.__annotations__] + [
        n for n, v in vars(OutcomeKind).items() if callable(v) and not n.startswith("_")]
    for name in [*required, *OPTIONAL_MEMBERS]:
        assert name in _listed(kind), name
    study = doc.split("\n## A Python study\n", 1)[1].split("\n## ", 1)[0]
    assert set(HOOKS) == set(StudyHooks.__annotations__) | {
        n for n, v in vars(StudyHooks).items() if callable(v) and not n.startswith("_")}
    assert set(HOOKS) <= _listed(study)


def _listed(section: str) -> set[str]:
    """The names in the first cells of the tables of ``section``."""
    cells = [line.split("|")[1] for line in section.splitlines() if line.startswith("| `")]
    return {name for cell in cells for name in re.findall(r"`(\w+)", cell)}


def test_the_guides_python_study_audits_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    scope: dict[str, Any] = {}
    exec(_python_block(GUIDE.read_text(encoding="utf-8"), "## A Python study"), scope)
    study = scope["MiniIntersectional"]()
    table = counterbench.prompts(study)
    assert len(table) == 12 and set(table["caste"]) == {"Brahmin", "Dalit", "OBC"}
    done = counterbench.audit(study, ["sim:biased"], out=tmp_path / "out", store=tmp_path / "cb.db", bootstrap=50)
    assert done.run.complete and done.run.totals["ok"] == 12
    again = counterbench.analyze(tmp_path / "cb.db", study, bootstrap=50)
    assert set(again.tables["outcome_levels"]["level"]) >= {"girl", "Dalit"}


def test_the_guides_backend_runs_by_object_and_by_model_string(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from counterbench.models.registry import BACKENDS
    from counterbench.run.results import load_results

    doc = GUIDE.read_text(encoding="utf-8")
    scope: dict[str, Any] = {}
    for step in (0, 1):  # the backend object, then its model string: each in a folder of its own
        (tmp_path / str(step)).mkdir()
        (tmp_path / str(step) / "examples").symlink_to(REPO / "examples")
        monkeypatch.chdir(tmp_path / str(step))
        try:
            exec(_python_block(doc, "## A backend", step), scope)
        finally:
            if "echo" in BACKENDS:
                BACKENDS.unregister("echo")
        rows = load_results(tmp_path / str(step) / "cb.db")
        assert set(rows["model"]) == {"echo:last-line"} and len(rows) == len(scope["table"])
        assert set(rows["response"]) == {"### yes"} and set(rows["status"]) == {"ok"}
