"""The hiring study's paper preset runs to a report from a store with a simulated model (the check is
:func:`tests.studies.test_paper_presets_from_store.paper_preset_completes_from_a_store`; a file of its own so
that it runs beside the STEM preset's, not after it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.studies.test_paper_presets_from_store import PAPER, paper_preset_completes_from_a_store

pytestmark = pytest.mark.slow  # scheduled first (tests/conftest.py)


@pytest.mark.parametrize(("study", "model", "tables"), PAPER[1:], ids=[p[0] for p in PAPER[1:]])
def test_the_paper_preset_completes_from_a_store(tmp_path: Path, study: str, model: str,
                                                 tables: tuple[str, ...]) -> None:
    paper_preset_completes_from_a_store(tmp_path, study, model, tables)
