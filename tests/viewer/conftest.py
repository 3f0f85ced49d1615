"""A store with two simulated models × the quick preset, one answer carrying an XSS payload, and a
running ``counterbench view`` on it (a real subprocess on 127.0.0.1)."""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO, run_cli

PAYLOAD = "<script>alert(1)</script><img src=x onerror=alert(1)>"
MODELS = ("sim:biased", "sim:fair")


@dataclass(frozen=True)
class PlantedStore:
    path: Path
    #: the id of the response whose text carries :data:`PAYLOAD`
    payload_id: int


@pytest.fixture(scope="session")
def planted_store(tmp_path_factory: pytest.TempPathFactory) -> PlantedStore:
    folder = tmp_path_factory.mktemp("viewer")
    store = folder / "answers.db"
    done = run_cli("run", "rupeebias", "--model", MODELS[0], "--model", MODELS[1], "--preset", "quick",
                   "--store", str(store), "--no-progress")
    assert done.returncode == 0, done.stderr
    with contextlib.closing(sqlite3.connect(store)) as conn, conn:
        row = conn.execute(
            "SELECT r.id, r.response FROM responses r JOIN prompts p USING (prompt_id, prompt_hash) "
            "WHERE r.model = ? AND p.axis = 'Caste' AND r.status = 'ok' ORDER BY r.id LIMIT 1", (MODELS[0],)
        ).fetchone()
        conn.execute("UPDATE responses SET response = ? WHERE id = ?", (f"{PAYLOAD} {row[1]}", row[0]))
    return PlantedStore(store, int(row[0]))


@contextlib.contextmanager
def running_viewer(store: Path, timeout: float = 60) -> Iterator[str]:
    """Start ``counterbench view --store STORE --port 0``; yield its base URL; stop it."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, "-m", "counterbench.cli", "view", "--store", str(store), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + timeout
        assert proc.stdout is not None
        url = None
        lines = []
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            found = re.search(r"Open (http://127\.0\.0\.1:\d+)/", line)
            if found:
                url = found.group(1)
                break
        if url is None:
            proc.kill()
            err = proc.stderr.read() if proc.stderr else ""
            raise AssertionError(f"the viewer did not start: {''.join(lines)} {err}")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="session")
def viewer(planted_store: PlantedStore) -> Iterator[str]:
    with running_viewer(planted_store.path) as url:
        yield url
