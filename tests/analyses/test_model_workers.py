"""Models analysed side by side in worker processes give the numbers of one after another, to the bit."""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path

import pandas as pd
import pytest

from counterbench.analyses.model_workers import auto_workers, checked_workers, map_in_workers
from counterbench.errors import UserError
from counterbench.pipeline import analyze
from counterbench.prompts import prompts
from counterbench.run import run_prompts

pytestmark = pytest.mark.slow  # scheduled first (tests/conftest.py)


@pytest.fixture(scope="module")
def three_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("workers")
    store, twin = folder / "three.db", folder / "fair_twin.yaml"
    twin.write_text("extends: fair\nnoise_sd: 0.05\n")
    table = prompts("rupeebias", use_case=["salary_estimation"], sample_slots=12)
    summary = run_prompts(table, ["sim:fair", "sim:biased", f"sim:{twin}"], store=store, handle_signals=False)
    assert summary.complete
    return store


def test_two_workers_give_the_tables_and_summary_of_one(three_models: Path) -> None:
    alone = analyze(three_models, "rupeebias", bootstrap=60, seed=3, workers=1)
    side_by_side = analyze(three_models, "rupeebias", bootstrap=60, seed=3, workers=2)
    assert list(alone.tables) == list(side_by_side.tables)
    for name, table in alone.tables.items():
        pd.testing.assert_frame_equal(table, side_by_side.tables[name], check_exact=True, obj=name)
    for summary in (alone.summary, side_by_side.summary):
        summary["test_record"].pop("analysed_at")
    differing = {k for k in alone.summary if alone.summary[k] != side_by_side.summary[k]}
    assert differing <= {"analysed_at"}
    assert not alone.tables["model_differences"].empty and len(alone.tables["leaderboard"]) == 3


def test_tasks_run_in_other_processes_in_order_and_their_errors_come_back() -> None:
    pids = map_in_workers(lambda k: (k, os.getpid()), list(range(5)), 2)
    assert [k for k, _ in pids] == list(range(5))
    assert {pid for _, pid in pids} - {os.getpid()} and os.getpid() not in {pid for _, pid in pids}

    def fails(k: int) -> int:
        if k == 3:
            raise UserError("model 3 has no usable answer")
        return k

    with pytest.raises(UserError, match="model 3 has no usable answer"):
        map_in_workers(fails, list(range(5)), 2)
    assert map_in_workers(lambda k: k * 2, [1, 2], 1) == [2, 4]


def test_a_worker_that_dies_is_one_clear_line() -> None:
    def dies(k: int) -> int:
        if k == 1:
            os._exit(9)  # as the kernel's out-of-memory killer would end it
        return k

    with pytest.raises(UserError, match=r"stopped unexpectedly.*--workers 1"):
        map_in_workers(dies, [0, 1, 2], 2)


def test_workers_are_chosen_by_the_store_size_and_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    assert auto_workers(99_999, 9) == 1
    assert 1 <= auto_workers(352_350, 9) <= 9 and auto_workers(352_350, 1) == 1
    monkeypatch.setitem(sys.modules, "ray", types.SimpleNamespace(is_initialized=lambda: True))
    assert auto_workers(352_350, 9) == 1  # a Ray driver's threads are not forked
    assert checked_workers(None) is None and checked_workers(2) == 2
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(UserError, match="--workers must be a whole number"):
            checked_workers(bad)


def test_the_cli_analyses_with_workers_and_refuses_a_bad_count(three_models: Path, tmp_path: Path) -> None:
    from tests.conftest import run_cli

    one, two = tmp_path / "one", tmp_path / "two"
    for out, workers in ((one, "1"), (two, "2")):
        done = run_cli("analyze", "rupeebias", "--store", str(three_models), "--out", str(out), "--bootstrap", "40",
                       "--workers", workers)
        assert done.returncode == 0, done.stderr
    for table in sorted(one.glob("*.csv")):
        assert table.read_bytes() == (two / table.name).read_bytes(), table.name
    bad = run_cli("analyze", "rupeebias", "--store", str(three_models), "--out", str(tmp_path / "bad"),
                  "--workers", "0")
    assert bad.returncode == 2 and bad.stderr.strip().splitlines() == [
        "counterbench: error: --workers must be at least 1, got 0"]
