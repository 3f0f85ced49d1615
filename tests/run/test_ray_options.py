"""``--ray [ADDRESS]`` on the command line and ``ray=`` in Python: parsing and mistakes (no Ray started)."""

from __future__ import annotations

from pathlib import Path

import pytest

from counterbench.commands.run_options import optional_ray_address
from counterbench.errors import UserError
from counterbench.run.ray_exec import RayOptions, ray_options
from tests.run.conftest import cli, one_error_line


@pytest.mark.parametrize(("argv", "expected"), [
    (["run", "rupeebias", "--ray"], ["run", "rupeebias", "--ray=local"]),
    (["run", "--ray", "rupeebias", "-m", "x"], ["run", "--ray=local", "rupeebias", "-m", "x"]),
    (["run", "--ray", "--model", "sim:biased"], ["run", "--ray=local", "--model", "sim:biased"]),
    (["run", "--ray", "auto"], ["run", "--ray", "auto"]),
    (["run", "--ray", "10.0.0.5:6379"], ["run", "--ray", "10.0.0.5:6379"]),
    (["run", "--ray", "ray://head:10001", "x"], ["run", "--ray", "ray://head:10001", "x"]),
    (["run", "--ray=auto"], ["run", "--ray=auto"]),
])
def test_ray_may_stand_alone_or_take_an_address(argv: list[str], expected: list[str]) -> None:
    assert optional_ray_address(argv) == expected


def test_python_ray_argument() -> None:
    assert ray_options(None) is None and ray_options(False) is None
    assert ray_options(True) == RayOptions()
    assert ray_options("auto") == RayOptions(address="auto")
    assert ray_options("local") == RayOptions(address=None)
    with pytest.raises(UserError):
        ray_options(3)
    with pytest.raises(UserError):
        RayOptions(actors=0)


@pytest.mark.parametrize(("extra", "needle"), [
    (["--ray", "--ray-threads", "0"], "--ray-threads"),
    (["--ray-actors", "2"], "need --ray"),
])
def test_ray_option_mistakes_are_one_line(tmp_path: Path, extra: list[str], needle: str) -> None:
    proc = cli("run", "rupeebias", "--preset", "quick", "--model", "sim:biased", "--store", str(tmp_path / "s.db"),
               *extra, cwd=tmp_path)
    assert needle in one_error_line(proc)
    assert not (tmp_path / "s.db").exists()
