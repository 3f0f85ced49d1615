"""``--ray [ADDRESS]`` on the command line and ``ray=`` in Python: parsing and mistakes (no Ray started)."""

from __future__ import annotations

from pathlib import Path

import pytest

from counterbench.commands.run_options import optional_ray_address
from counterbench.errors import UserError
from counterbench.run.ray_exec import RayOptions, ray_options
from tests.run.conftest import cli, cli_here, one_error_line


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
    proc = cli_here("run", "rupeebias", "--preset", "quick", "--model", "sim:biased", "--store", str(tmp_path / "s.db"),
                    *extra, cwd=tmp_path)
    assert needle in one_error_line(proc)
    assert not (tmp_path / "s.db").exists()


@pytest.mark.parametrize("address", ["127.0.0.1:1", "ray://127.0.0.1:1"])
def test_a_ray_address_nobody_answers_at_is_refused_within_30_seconds(tmp_path: Path, address: str) -> None:
    import time

    started = time.monotonic()
    proc = cli("run", "rupeebias", "--preset", "quick", "--model", "sim:biased", "--store", str(tmp_path / "s.db"),
               "--ray", address, cwd=tmp_path, timeout=60)
    elapsed = time.monotonic() - started
    line = one_error_line(proc)  # one line: none of Ray's own warnings
    assert f"cannot connect to the Ray cluster at {address}: nothing answers at 127.0.0.1:1" in line
    # 30 s on an idle machine with room to spare (about 3 s there); a loaded CI box adds start-up time
    assert elapsed < 60 and not (tmp_path / "s.db").exists()


def test_the_probe_is_quick_and_bounded() -> None:
    import time

    from counterbench.run.ray_setup import RAY_CONNECT_TIMEOUT_S, probe_address

    assert RAY_CONNECT_TIMEOUT_S <= 10  # a silent address is given up after this, far below 30 s
    started = time.monotonic()
    with pytest.raises(UserError, match=r"nothing answers at 127\.0\.0\.1:1 \(Connection refused"):
        probe_address("127.0.0.1:1")
    probe_address("auto")  # nothing to probe: Ray resolves it
    assert time.monotonic() - started < 5
