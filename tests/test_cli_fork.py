"""The tests' warm ``counterbench`` (``tests/cli_fork.py``) gives what a fresh interpreter gives."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from counterbench.run.store import open_store
from tests.cli_fork import WarmCli, WarmPool
from tests.conftest import REPO, counterbench_command, run_cli


@pytest.fixture(scope="module")
def warm() -> Iterator[WarmCli]:
    cli = WarmCli(REPO)
    yield cli
    cli.close()


def _fresh(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return counterbench_command(tuple(args), cwd, dict(os.environ), 120, warm=False)


@pytest.mark.parametrize("args", [
    ["studies"],
    ["prompts", "rupeebias", "--preset", "quick", "-o", "p.csv"],  # writes into the working directory
    ["run", "--prompts", "missing.parquet", "--model", "sim:fair", "--store", "s.db"],  # a user mistake
])
def test_a_warm_command_equals_a_fresh_one(warm: WarmCli, tmp_path: Path, args: list[str]) -> None:
    """The same output, errors, exit status and files, run from the same folder (outputs name their paths)."""
    env = dict(os.environ)
    assert warm.can_run(tuple(args), env)
    got = warm.run(tuple(args), tmp_path, env, 120)
    assert got is not None
    written = sorted(p.name for p in tmp_path.iterdir())
    for path in tmp_path.iterdir():
        path.unlink()
    expected = _fresh(args, tmp_path)
    timed = re.compile(r"\b\d+\.\d+ s\b")  # "540 prompts in 0.12 s": how long it took may differ
    assert (got.returncode, timed.sub("_ s", got.stdout), got.stderr) == (
        expected.returncode, timed.sub("_ s", expected.stdout), expected.stderr)
    assert written == sorted(p.name for p in tmp_path.iterdir())
    assert got.args == [sys.executable, "-m", "counterbench.cli", *args]


def test_a_hung_command_times_out_and_the_next_one_runs(warm: WarmCli, tmp_path: Path) -> None:
    env = dict(os.environ)
    store = tmp_path / "s.db"
    with open_store(store):
        pass
    with pytest.raises(subprocess.TimeoutExpired):  # the viewer serves until it is stopped
        warm.run(("view", "--store", str(store), "--port", "0"), tmp_path, env, 1)
    again = warm.run(("studies",), tmp_path, env, 60)
    assert again is not None and again.returncode == 0 and "rupeebias" in again.stdout


def test_what_a_warm_process_cannot_be_runs_fresh(warm: WarmCli) -> None:
    env = dict(os.environ)
    assert not warm.can_run(("run", "rupeebias", "--ray"), env)
    assert not warm.can_run(("analyze", "rupeebias", "--workers=2"), env)
    assert warm.run(("studies",), REPO, env, 60) is not None
    assert warm.can_run(("studies",), {**env, "PYTEST_CURRENT_TEST": "another test"})
    assert not warm.can_run(("studies",), {**env, "PYTHONPATH": "/elsewhere"})  # read at start-up


def test_the_pool_keeps_one_warm_process_per_environment(tmp_path: Path) -> None:
    pool = WarmPool(REPO)
    pool.MAX_WARM = 1
    try:
        plain = dict(os.environ)
        for _ in range(2):
            done = pool.run(("studies",), tmp_path, plain, 60)
            assert done is not None and done.returncode == 0 and "rupeebias" in done.stdout
        assert pool.run(("studies",), tmp_path, plain | {"COUNTERBENCH_TEST_MARK": "1"}, 60) is None  # no room
        assert pool.run(("run", "rupeebias", "--ray"), tmp_path, plain, 60) is None
    finally:
        pool.close()


def test_run_cli_goes_fresh_for_its_own_environment(tmp_path: Path) -> None:
    """An ``env`` of its own reaches the command: here the terminal width its help is wrapped to."""
    narrow = run_cli("run", "--help", cwd=tmp_path, env={"COLUMNS": "60"})
    plain = run_cli("run", "--help", cwd=tmp_path)
    assert narrow.returncode == 0 == plain.returncode
    assert max(map(len, narrow.stdout.splitlines())) <= 60 < max(map(len, plain.stdout.splitlines()))
