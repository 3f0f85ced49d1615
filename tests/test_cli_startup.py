"""The CLI starts at once: ``--version`` and every ``--help`` import no numerical library.

Each case runs ``python -X importtime -m counterbench.cli ...`` as a user would and reads the
interpreter's own list of imported modules from stderr; benchmarks/cli_startup.py times the same
command lines.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import typer

from counterbench.cli import app
from tests.conftest import REPO

HEAVY = ("pandas", "scipy", "statsmodels", "matplotlib", "numpy", "pyarrow")
VERBS = sorted(typer.main.get_command(app).commands)  # type: ignore[attr-defined]


def imported_modules(*args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run the CLI with ``args`` under ``-X importtime``; its result and every module it imported."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "counterbench.cli", *args], cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO / "src")}, capture_output=True,
                          text=True, timeout=120)
    names = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines()
             if line.startswith("import time:") and "|" in line}
    return done, names


def heavy_in(names: set[str]) -> list[str]:
    return sorted(name for name in names if name.split(".")[0] in HEAVY)


def test_the_importtime_reader_sees_a_heavy_import() -> None:
    # the check can fail: a verb that does load pandas (the prompt table) is seen doing it
    done, names = imported_modules("studies")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "pandas" in heavy_in(names)


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["audit", "--help"], ["hiring", "resumes", "--help"]])
def test_version_and_help_import_no_numerical_library(args: list[str]) -> None:
    done, names = imported_modules(*args)
    assert done.returncode == 0, done.stderr[-2000:]
    assert heavy_in(names) == []
    assert "pydantic" not in names and "rich" not in names  # typer's converters, rich's help panels
    if args == ["--version"]:
        assert done.stdout.startswith("counterbench ")
    else:
        assert done.stdout.startswith("Usage: counterbench")


@pytest.mark.parametrize("verb", [v for v in VERBS if v != "audit"])
def test_every_verb_help_imports_no_numerical_library(verb: str) -> None:
    done, names = imported_modules(verb, "--help")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith(f"Usage: counterbench {verb}")
    assert heavy_in(names) == []
