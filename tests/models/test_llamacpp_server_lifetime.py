"""A server started for tests dies with the process that started it, however that process ends.

The kernel's parent-death signal as the llama.cpp server sets it up (:func:`die_with_parent`), checked
with plain Python processes: a parent is killed with SIGKILL (no teardown, no atexit) and its child
must be gone. (The real llama.cpp server is checked the same way in ``test_llamacpp_server.py``.)
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux-only")

CHILD = ("import os, sys, time\n"
         "from counterbench.testing.llamacpp_server import die_with_parent\n"
         "{setup}\n"
         "print(os.getpid(), flush=True)\n"
         "time.sleep(120)\n")
PARENT = ("import subprocess, sys, time\n"
          "child = subprocess.Popen([sys.executable, '-c', sys.argv[1]], stdout=subprocess.PIPE, text=True)\n"
          "print(child.stdout.readline().strip(), flush=True)\n"
          "time.sleep(120)\n")


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie that nobody reaped yet counts as dead)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state not in ("Z", "X")


def wait_dead(pid: int, seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not alive(pid)


def _orphan_after_parent_killed(setup: str) -> int:
    """Start parent -> child (running ``setup``), SIGKILL the parent; the child's pid."""
    parent = subprocess.Popen([sys.executable, "-c", PARENT, CHILD.format(setup=setup)], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert alive(child)
    finally:
        parent.kill()
        parent.wait()
    return child


def test_a_child_that_asked_to_die_with_its_parent_does() -> None:
    child = _orphan_after_parent_killed("die_with_parent(os.getppid())")
    assert wait_dead(child)


def test_without_it_the_child_would_outlive_its_parent() -> None:
    """The control: the same child without the request is orphaned (then ended here)."""
    import os
    import signal

    child = _orphan_after_parent_killed("pass")
    try:
        assert not wait_dead(child, seconds=1.0)
    finally:
        os.kill(child, signal.SIGKILL)
    assert wait_dead(child)


def test_a_child_whose_parent_is_already_gone_exits_at_once() -> None:
    done = subprocess.run([sys.executable, "-c", CHILD.format(setup="die_with_parent(os.getppid() + 1)")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stdout == ""
