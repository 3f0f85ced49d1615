"""YAML reads an unquoted yes/no as a boolean: a label study written so is refused with the fix ("quote yes
and no"), and the quoted form — the one docs/studies.md shows — builds its prompts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import counterbench
from counterbench.errors import UserError
from tests.conftest import REPO

EXAMPLE = (REPO / "examples" / "approval_crossed.yaml").read_text(encoding="utf-8")
QUOTED = 'outcome: {kind: label, labels: ["yes", "no"]}'


def _study(tmp_path: Path, outcome: str) -> str:
    assert QUOTED in EXAMPLE
    path = tmp_path / "approval.yaml"
    path.write_text(EXAMPLE.replace(QUOTED, outcome), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(("outcome", "key"), [
    ("outcome: {kind: label, labels: [yes, no, cannot decide]}", "labels"),
    ("outcome: {kind: label, labels: [approve, \"no\", On]}", "labels"),
    ('outcome: {kind: label, labels: ["yes", "no"], positive: no}', "positive"),
])
def test_unquoted_yes_and_no_are_refused_with_the_fix(tmp_path: Path, outcome: str, key: str) -> None:
    with pytest.raises(UserError) as err:
        counterbench.prompts(_study(tmp_path, outcome))
    message = str(err.value)
    assert f"use_cases.approval.outcome.{key}: " in message and "quote yes and no" in message
    assert 'labels: ["yes", "no"]' in message


def test_the_quoted_labels_of_the_docs_build(tmp_path: Path) -> None:
    docs = (REPO / "docs" / "studies.md").read_text(encoding="utf-8")
    row = re.search(r"\| `label` \| `(labels: [^`]*)`", docs)
    assert row, "docs/studies.md lists the label kind's parameters"
    table = counterbench.prompts(_study(tmp_path, f"outcome: {{kind: label, {row.group(1)}}}"))
    assert set(table["answer_type"]) == {"label:yes|no|cannot decide"}
