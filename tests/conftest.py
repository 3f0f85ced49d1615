"""Shared test helpers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_REFERENCE = REPO.parent / "shared" / "reference"


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
