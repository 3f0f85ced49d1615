"""Shared test helpers."""

from __future__ import annotations

import atexit
import fcntl
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

import pytest

from tests.cli_fork import WarmPool

# the suite tests counterbench itself: packages installed beside it register no plug-ins here (one test,
# tests/test_plugin_package.py, installs a plug-in package of its own and lifts this for it)
os.environ["COUNTERBENCH_PLUGINS"] = "builtin"
# a relative PYTHONPATH (``PYTHONPATH=src pytest``) would point elsewhere in a CLI run from a test's own folder
if os.environ.get("PYTHONPATH"):
    os.environ["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) if p else p
                                               for p in os.environ["PYTHONPATH"].split(os.pathsep))

REPO = Path(__file__).resolve().parents[1]
SHARED_REFERENCE = REPO.parent / "shared" / "reference"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Files with a ``slow`` test first, each file's tests in their order, then the others, with the files
    that have an ``alone`` test half-way through them: under ``--dist loadfile`` a worker takes the next
    file when it is done with one, so the long files start early and the many short ones even out the end.
    (pytest-xdist's own order, by number of tests per file, is switched off in pyproject.toml: it put
    one-test files of 25-35 s — the paper presets — last, and one worker ran them alone for the last ~45 s
    of the suite.) An ``alone`` test first waits for the test beside it to end, with a core idle: beside the
    short files that wait is short, beside a slow one up to half a minute."""
    alone_files = {item.path for item in items if item.get_closest_marker("alone") is not None}
    slow_files = {item.path for item in items if item.get_closest_marker("slow") is not None} - alone_files
    others = list(dict.fromkeys(item.path for item in items if item.path not in slow_files | alone_files))
    middle = set(others[: len(others) // 2])
    rank = {path: 0 if path in slow_files else 1 if path in middle else 2 if path in alone_files else 3
            for path in {item.path for item in items}}
    items.sort(key=lambda item: rank[item.path])  # stable: the order within each group is kept


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
        item.stash[_RUN_LOCK] = lock
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


_RUN_LOCK = pytest.StashKey[IO[str]]()


@pytest.fixture
def share_the_machine(request: pytest.FixtureRequest) -> Callable[[], None]:
    """For an ``alone`` test whose timing-sensitive part is over: the rest of it (e.g. finishing a long run)
    runs beside other tests again. Downgrades its exclusive hold on the suite's lock to a shared one (another
    ``alone`` test waiting for the lock may run first); does nothing in one process."""

    def share() -> None:
        lock = request.node.stash.get(_RUN_LOCK, None)
        if lock is not None:
            fcntl.flock(lock, fcntl.LOCK_SH)

    return share


_WARM = WarmPool(REPO)
atexit.register(_WARM.close)


def counterbench_command(args: tuple[str, ...], cwd: Path, env: dict[str, str], timeout: float,
                         *, warm: bool = True) -> subprocess.CompletedProcess[str]:
    """``counterbench ARGS`` in a process of its own, with ``env`` as its whole environment: forked from a warm
    process that has already imported counterbench when ``warm`` and the warm process can be the same as a
    fresh interpreter (``tests/cli_fork.py``), in a fresh interpreter otherwise
    (``COUNTERBENCH_TESTS_FRESH_CLI=1``: always)."""
    done = _WARM.run(args, cwd, env, timeout) if warm else None
    if done is not None:
        return done
    return subprocess.run([sys.executable, "-m", "counterbench.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def run_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
            timeout: float = 300, fresh: bool = False) -> subprocess.CompletedProcess[str]:
    """Run ``counterbench ARGS`` in a process of its own, as a user would (:func:`counterbench_command`;
    ``fresh=True`` or an ``env`` of its own: a fresh interpreter)."""
    return counterbench_command(args, cwd or REPO, {**os.environ, **(env or {})}, timeout,
                                warm=not fresh and env is None)


@pytest.fixture
def cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    return run_cli


def run_cli_here(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``counterbench ARGS`` in this test's process: :func:`counterbench.cli.main` with its streams and
    exit status caught, from ``cwd`` (the repository by default).

    For checks of one command's answer — an error's single line and exit code — where a fresh
    interpreter (some 3–5 s of imports each) adds nothing; what only a real process shows (signals,
    exit handlers, the installed entry point) stays with :func:`run_cli`."""
    import contextlib
    import io

    from counterbench.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved_argv, saved_cwd = sys.argv, Path.cwd()
    sys.argv = ["counterbench", *args]
    code = 0
    try:
        os.chdir(cwd or REPO)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main()
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    finally:
        sys.argv = saved_argv
        os.chdir(saved_cwd)
    return subprocess.CompletedProcess(["counterbench", *args], code, out.getvalue(), err.getvalue())


@pytest.fixture
def cli_here() -> Callable[..., subprocess.CompletedProcess[str]]:
    return run_cli_here


@pytest.fixture
def reference_dir() -> Path:
    path = SHARED_REFERENCE / "rupeebias"
    if not path.is_dir():
        pytest.skip("../shared/reference/rupeebias is not present")
    return path
