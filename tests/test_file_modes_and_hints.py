"""Files counterbench writes follow the user's umask (tables, exports, analysis files, JUnit), and
`counterbench models` prints install hints with their extras (``counterbench[local]``) intact."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from counterbench.models.registry import BackendInfo
from tests.conftest import run_cli_here


@pytest.fixture
def umask_002() -> Iterator[None]:
    old = os.umask(0o002)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_written_files_follow_the_umask(tmp_path: Path, umask_002: None) -> None:
    store = tmp_path / "m.db"
    steps = [
        ("prompts", "rupeebias", "--preset", "quick", "--out", str(tmp_path / "p.csv")),
        ("run", "rupeebias", "--model", "sim:fair", "--preset", "quick", "--use-case", "salary_estimation",
         "--store", str(store), "--no-progress"),
        ("export", "--store", str(store), "--out", str(tmp_path / "e.parquet")),
        ("analyze", "rupeebias", "--store", str(store), "--out", str(tmp_path / "an"), "--bootstrap", "20"),
        ("check", "--analysis", str(tmp_path / "an"), "--junit", str(tmp_path / "gate.xml"), "--fail-on", "w=off"),
    ]
    for args in steps:
        done = run_cli_here(*args)  # in this process: the umask set above
        assert done.returncode in (0, 1), done.stderr
    written = [tmp_path / "p.csv", tmp_path / "e.parquet", tmp_path / "gate.xml",
               *sorted((tmp_path / "an").iterdir())]
    assert len(written) > 10
    for path in written:
        assert mode(path) == 0o664, (path.name, oct(mode(path)))


def test_models_hints_keep_the_extras(monkeypatch: pytest.MonkeyPatch) -> None:
    from counterbench import cli
    from counterbench.models import registry

    rows = [BackendInfo("local", "local", "xllamacpp", False,
                        "xllamacpp is not installed: pip install 'counterbench[local]'"),
            BackendInfo("anthropic", "anthropic:claude-haiku-4.5", "anthropic SDK", False,
                        "pip install 'counterbench[anthropic]'")]
    monkeypatch.setattr(registry, "list_backends", lambda **_: rows)
    result = CliRunner().invoke(cli.app, ["models", "--no-ports"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "pip install 'counterbench[local]'" in result.output
    assert "pip install 'counterbench[anthropic]'" in result.output
