"""Shared test helpers."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_REFERENCE = REPO.parent / "shared" / "reference"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Under pytest-xdist (the suite's default), a test marked ``alone`` runs with no other test beside it —
    its setup, module fixtures included, and teardown — and the others run side by side.

    A readers–writer lock over every worker of the run: others share it, an ``alone`` test takes it
    whole; a turnstile taken first keeps waiting ``alone`` tests from being starved by the sharers."""
    run = getattr(item.config, "workerinput", {}).get("testrunuid")
    if not run:  # one process: nothing runs beside anything
        yield
        return
    folder = Path(tempfile.gettempdir())
    alone = item.get_closest_marker("alone") is not None
    with open(folder / f"counterbench-tests-{run}.turnstile", "a") as turnstile, \
            open(folder / f"counterbench-tests-{run}.lock", "a") as lock:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        fcntl.flock(lock, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        fcntl.flock(turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def run_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
            timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run ``counterbench ARGS`` in a subprocess, as a user would."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "counterbench.cli", *args],
        cwd=cwd or REPO,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture
def reference_dir() -> Path:
    path = SHARED_REFERENCE / "rupeebias"
    if not path.is_dir():
        pytest.skip("../shared/reference/rupeebias is not present")
    return path
