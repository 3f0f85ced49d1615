"""The suite runs in several processes (pytest-xdist); a test marked ``alone`` must still run with no
other test beside it, and the rest must run side by side (tests/conftest.py's lock)."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

RECORD = '''
import json, os, time
from pathlib import Path

import pytest


def span(name, seconds):
    start = time.monotonic()
    time.sleep(seconds)
    Path(os.environ["SPANS"], name).write_text(json.dumps([start, time.monotonic()]))
'''


def _spans_of_a_suite(tmp_path: Path, alone_test: str) -> dict[str, list[float]]:
    """Run a small suite under the project's conftest on 2 workers: ``alone_test`` (the source of a test marked
    ``alone``, in the file collected first) and 3 files of 4 quarter-second tests; each span's [start, end]."""
    spans = tmp_path / "spans"
    spans.mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "record.py").write_text(RECORD)
    (tmp_path / "tests" / "test_alone.py").write_text(f"import pytest\nfrom record import span\n\n\n{alone_test}")
    for f in range(3):
        body = "".join(f"\n\ndef test_{i}():\n    span('shared_{f}_{i}', 0.25)\n" for i in range(4))
        (tmp_path / "tests" / f"test_shared_{f}.py").write_text(f"from record import span\n{body}")
    env = {**os.environ, "SPANS": str(spans), "PYTHONPATH": os.pathsep.join([str(REPO), str(tmp_path / "tests")])}
    # no hypothesis plugin: 0.6 s of imports in each of the 3 processes, and these tests use none
    args = ["-c", os.devnull, "-p", "tests.conftest", "-n", "2", "--dist", "load", "-q", "-p", "no:cacheprovider",
            "-p", "no:hypothesispytest", "-W", "ignore::pytest.PytestUnknownMarkWarning", str(tmp_path / "tests")]
    done = subprocess.run([sys.executable, "-m", "pytest", *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return {p.name: json.loads(p.read_text()) for p in spans.iterdir()}


def test_an_alone_test_overlaps_no_other_and_the_others_overlap(tmp_path: Path) -> None:
    recorded = _spans_of_a_suite(tmp_path, "@pytest.mark.alone\ndef test_alone():\n    span('alone', 1.0)\n")
    assert len(recorded) == 13
    alone = recorded.pop("alone")
    others = sorted(recorded.values())
    assert all(end <= alone[0] or start >= alone[1] for start, end in others), (alone, others)
    assert any(b[0] < a[1] for a, b in itertools.pairwise(others)), others  # two at a time elsewhere


def test_an_alone_test_that_shares_the_machine_overlaps_nothing_before_and_others_after(tmp_path: Path) -> None:
    """``share_the_machine()`` (tests/conftest.py) ends an ``alone`` test's exclusive part: nothing ran beside
    the part before it, and other tests run beside the part after it (the alone test is collected first, so it
    starts while the others wait)."""
    recorded = _spans_of_a_suite(
        tmp_path, "@pytest.mark.alone\ndef test_alone(share_the_machine):\n    span('alone_exclusive', 1.0)\n"
                  "    share_the_machine()\n    span('alone_shared', 1.5)\n")
    assert len(recorded) == 14
    exclusive, shared = recorded.pop("alone_exclusive"), recorded.pop("alone_shared")
    others = list(recorded.values())
    assert all(end <= exclusive[0] or start >= exclusive[1] for start, end in others), (exclusive, others)
    assert any(start < shared[1] and end > shared[0] for start, end in others), (shared, others)
